"""Every route of the viewer through Starlette's TestClient, over a store holding subagent-mixed."""

from __future__ import annotations

import re
import threading
import time

import orjson
from starlette.testclient import TestClient

from dsh.loop import Feed
from dsh.store.url import open_store
from dsh.ui.app import CSP, create_app
from tests.ui.conftest import Loaded
from tests.ui.helpers import HOSTILE_ID, SCRIPT, append_turn, replay_subagent_mixed, store_url


def test_sessions_page_lists_every_session_with_its_columns(client: TestClient, mixed_store: Loaded) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CSP
    html = page.text
    for sid in (mixed_store.parent, mixed_store.child("spawn"), mixed_store.child("fork"), HOSTILE_ID):
        assert f'data-session="{sid}"' in html
    assert "4 of 4 sessions" in html
    assert "Remember this fact for later" in html  # first prompt (shortened title)
    assert "deepseek-chat" in html
    assert "status-completed" in html
    assert 'class="badge kind-fork"' in html and 'class="badge kind-spawn"' in html
    for column in ("first prompt", "model", "created", "last activity", "status", "events", "children"):
        assert column in html


def test_sessions_json_matches_the_sessions_list_shape(client: TestClient, mixed_store: Loaded) -> None:
    body = client.get("/api/sessions", params={"sort": "created", "dir": "asc"}).json()
    assert body["total"] == 4
    parent = next(s for s in body["sessions"] if s["id"] == mixed_store.parent)
    assert parent["children"] == 2 and parent["status"] == "completed" and parent["eventCount"] == 24
    fork = next(s for s in body["sessions"] if s["id"] == mixed_store.child("fork"))
    assert fork["parentSession"] == mixed_store.parent
    assert fork["inheritedEventCount"] == 8 and fork["isSeeded"] is True
    keys = {"id", "parentSession", "isSeeded", "inheritedEventCount", "eventCount", "createdAt", "cwd"}
    assert keys <= set(parent)


def test_search_sort_and_pagination(client: TestClient, mixed_store: Loaded) -> None:
    found = client.get("/", params={"q": "codeword"}).text
    assert f'data-session="{mixed_store.child("fork")}"' in found
    assert f'data-session="{HOSTILE_ID}"' not in found
    assert client.get("/", params={"q": "no-such-thing"}).text.count("data-session=") == 0
    by_events = client.get("/api/sessions", params={"sort": "events", "dir": "desc"}).json()
    counts = [s["eventCount"] for s in by_events["sessions"]]
    assert counts == sorted(counts, reverse=True)
    for key in ("activity", "status", "title", "children", "id"):
        assert client.get("/", params={"sort": key, "dir": "asc"}).status_code == 200
    first = client.get("/api/sessions", params={"per": 3, "page": 1}).json()
    second = client.get("/api/sessions", params={"per": 3, "page": 2}).json()
    assert first["pages"] == 2 and len(first["sessions"]) == 3 and len(second["sessions"]) == 1
    assert not {s["id"] for s in first["sessions"]} & {s["id"] for s in second["sessions"]}
    html = client.get("/", params={"per": 3, "page": 1}).text
    assert 'rel="next"' in html and 'rel="prev"' not in html
    assert client.get("/", params={"page": "junk"}).status_code == 200


def test_parent_page_shows_the_tree_and_the_fork_cut(client: TestClient, mixed_store: Loaded) -> None:
    html = client.get(f"/s/{mixed_store.parent}").text
    spawn, fork = mixed_store.child("spawn"), mixed_store.child("fork")
    assert f'data-node="{spawn}"' in html and f'data-node="{fork}"' in html
    assert f'class="cutmark fork-cut" data-child="{fork}"' in html
    assert "inherits seq 0–7; its cut is at seq 8" in html
    assert f'href="/s/{spawn}">open child session' in html
    assert f'href="/s/{fork}">open child session' in html
    assert "<summary>reasoning</summary>" in html and "I will call subagent." in html
    assert "PARENT_DONE" in html and "usage (step 1)" in html
    assert "tool call · subagent_fork" in html and "SAFFRON" in html


def test_fork_child_page_marks_its_inherited_prefix(client: TestClient, mixed_store: Loaded) -> None:
    html = client.get(f"/s/{mixed_store.child('fork')}").text
    assert 'class="badge kind-fork"' in html
    assert "inherited prefix (8 events from the parent)" in html
    assert "own events from seq 8" in html
    own = html.split('<div id="transcript">', 1)[1]
    assert "What is the project codeword from earlier?" in own and "SAFFRON" in own
    assert "Remember this fact" not in own  # the inherited prompt sits in the collapsed prefix
    assert f'href="/s/{mixed_store.parent}"' in html


def test_raw_events_view(client: TestClient, mixed_store: Loaded) -> None:
    html = client.get(f"/s/{mixed_store.parent}/events").text
    assert html.count('<tr class="" data-seq=') == 24
    assert "assistant/message" in html and "turn/end" in html
    assert "✂ fork child Recall codeword" in html
    # each completed turn shows the command that branches there (the viewer stays read-only)
    parent = mixed_store.parent
    assert html.count('<tr class="forkhere">') == html.count(">turn/end<") > 0
    assert f"⑂ fork here: <code>dsh sessions fork {parent} --at 1</code>" in html
    fork_events = client.get(f"/s/{mixed_store.child('fork')}/events").text
    assert fork_events.count('<tr class="inherited"') == 8


def test_session_json(client: TestClient, mixed_store: Loaded) -> None:
    body = client.get(f"/api/sessions/{mixed_store.parent}").json()
    assert body["children"] == [mixed_store.child("spawn"), mixed_store.child("fork")]
    assert len(body["events"]) == 24 and body["events"][0]["type"] == "turn/start"
    assert client.get("/api/sessions/nope").status_code == 404


def test_unknown_session_is_a_404_page(client: TestClient) -> None:
    for path in ("/s/<b>nope</b>", "/s/nope/events", "/s/nope/live"):
        response = client.get(path)
        assert response.status_code == 404
        assert "<b>" not in response.text


def test_recorded_markup_is_escaped_everywhere(client: TestClient) -> None:
    for path in ("/", f"/s/{HOSTILE_ID}", f"/s/{HOSTILE_ID}/events", "/?q=script"):
        html = client.get(path).text
        assert "<script>window" not in html and "<img src=x" not in html
        assert re.search(r"<script(?! src=\"/static/ui.js\")", html) is None, path
    page = client.get(f"/s/{HOSTILE_ID}").text
    assert "&lt;script&gt;window.__pwned = 1" in page
    assert "<strong>bold</strong>" in page  # Markdown still renders
    assert 'href="javascript:' not in page
    assert SCRIPT not in client.get(f"/api/sessions/{HOSTILE_ID}").headers.get("content-type", "")


def test_static_files(client: TestClient) -> None:
    assert client.get("/static/ui.css").headers["content-type"].startswith("text/css")
    js = client.get("/static/ui.js")
    assert js.headers["content-type"].startswith("text/javascript") and "EventSource" in js.text


def test_report_route_without_a_report(client: TestClient) -> None:
    assert client.get("/report").status_code == 404


def test_live_stream_sends_an_appended_turn_then_idles(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = store_url(tmp_path)
    result = replay_subagent_mixed(url)
    spawn = next(s.live_id for s in result.sessions if s.kind == "spawn")
    assert spawn is not None
    app = create_app(lambda: open_store(url), poll_interval=0.02)
    with TestClient(app) as test_client:
        before = len(test_client.get(f"/api/sessions/{spawn}").json()["events"])
        append_turn(url, spawn, "LIVE <b>TURN</b>")
        with test_client.stream("GET", f"/s/{spawn}/live", params={"from": before}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            body = "".join(response.iter_text())
    frames = [f for f in body.split("\n\n") if f.startswith(("id:", "event:"))]
    appended = [orjson.loads(f.split("data: ", 1)[1]) for f in frames if "event: append" in f]
    assert [a["seq"] for a in appended] == list(range(before, before + 6))
    answer = next(a for a in appended if a["type"] == "assistant/message")
    assert "LIVE &lt;b&gt;TURN&lt;/b&gt;" in answer["items"] and "<b>TURN" not in answer["items"]
    assert appended[-1]["status"] == "completed"
    assert "event: idle" in frames[-1]


def test_live_stream_carries_streaming_deltas_from_an_in_process_feed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = store_url(tmp_path)
    result = replay_subagent_mixed(url)
    spawn = next(s.live_id for s in result.sessions if s.kind == "spawn")
    assert spawn is not None
    feed = Feed()
    app = create_app(lambda: open_store(url), poll_interval=0.02, feed=feed)
    with TestClient(app) as test_client:
        before = len(test_client.get(f"/api/sessions/{spawn}").json()["events"])

        def later() -> None:
            time.sleep(0.3)
            feed.chunk(spawn, {"type": "text-delta", "index": 0, "text": "<i>strea"})
            feed.chunk("another-session", {"type": "text-delta", "index": 0, "text": "NOT MINE"})
            feed.chunk(spawn, {"type": "text-delta", "index": 0, "text": "ming</i>"})
            time.sleep(0.3)
            append_turn(url, spawn, "settled")

        worker = threading.Thread(target=later)
        worker.start()
        with test_client.stream("GET", f"/s/{spawn}/live", params={"from": before}) as response:
            body = "".join(response.iter_text())
        worker.join()
    deltas = [
        orjson.loads(f.split("data: ", 1)[1]) for f in body.split("\n\n") if f.startswith("event: delta")
    ]
    assert deltas == [{"kind": "text", "text": "<i>strea"}, {"kind": "text", "text": "ming</i>"}]
    assert body.index("event: delta") < body.index("event: append")
    assert "NOT MINE" not in body and "event: idle" in body


def test_a_session_page_shows_usage_and_cost_of_the_session_and_its_tree(
    client: TestClient, mixed_store: Loaded
) -> None:
    html = client.get(f"/s/{mixed_store.parent}").text
    usage = html.split('<section class="card" id="usage">', 1)[1].split("</section>", 1)[0]
    assert "<dt>this session</dt>" in usage and "<dt>tree (3 sessions)</dt>" in usage
    assert "6 calls · in " in usage and "4 calls · in " in usage, "the tree counts the children once"
    assert "$" in usage or "unknown" in usage


def test_a_session_page_shows_each_requests_prefix_reuse(client: TestClient, mixed_store: Loaded) -> None:
    html = client.get(f"/s/{mixed_store.parent}").text
    cache = html.split('<section class="card" id="cache">', 1)[1].split("</section>", 1)[0]
    assert cache.count('<tr class="reuse') == 4 and "no request rewrote its prefix" in cache
    fork = client.get(f"/s/{mixed_store.child('fork')}").text
    forked = fork.split('<section class="card" id="cache">', 1)[1].split("</section>", 1)[0]
    assert "the parent&#39;s request at the cut" in forked

"""The viewer shows each compaction: a marker with the span and the summary, the replaced
messages behind one click, a failed one as one line — over HTTP against the real local
server, and once in a real headless Chromium. Sessions made by the real loop."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
from starlette.testclient import TestClient

from dsh.store.url import open_store
from dsh.ui.app import create_app
from tests.compacted import FAILURE, PROMPT, SECOND, compacted, failed
from tests.ui import pages
from tests.ui.browser import serving
from tests.ui.helpers import run_in_thread

browser, page = pages.browser, pages.page  # the shared fixtures (tests.ui.pages)


@dataclass(frozen=True, slots=True)
class Store:
    url: str
    compacted: str
    failed: str


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    db = tmp_path_factory.mktemp("compaction-ui") / "s.db"

    async def make() -> tuple[str, str]:
        return await compacted(db), await failed(db)

    done, broken = run_in_thread(make)  # sync Playwright may own this thread's loop
    return Store(f"sqlite:{db}", done, broken)


def test_the_session_page_shows_the_marker_summary_and_originals(store: Store) -> None:
    with serving(store.url) as base, httpx.Client(base_url=base) as http:
        html = http.get(f"/s/{store.compacted}").raise_for_status().text
    marker = html[html.index('<div class="item compaction') :]
    marker = marker[: marker.index("</details>")]
    assert re.search(r"⟲ compacted turns 1–2: 5 messages, [\d,]+ → [\d,]+ tokens", marker)
    # the summary, as inert Markdown; the framing never shows
    assert "the two answers &lt;b&gt;bold&lt;/b&gt;" in marker and "<b>bold</b>" not in html
    assert "This is a checkpoint the harness wrote" not in html and "compacted-summary" not in html
    # the originals, behind one <details> (closed): the replaced prompts and the tool call
    assert '<details class="originals"><summary>the 5 replaced messages</summary>' in marker
    assert PROMPT.strip()[:60] in marker and SECOND.strip() in marker and "→ bash" in marker
    # the checkpoint is not a prompt: three prompt entries, the three the user typed
    assert html.count('<div class="item prompt') == 3


def test_a_failed_compaction_is_one_line(store: Store) -> None:
    with serving(store.url) as base, httpx.Client(base_url=base) as http:
        html = http.get(f"/s/{store.failed}").raise_for_status().text
    start = html.index('<div class="item compaction error"')
    marker = html[start : html.index("</div>\n</div>", start)]
    assert f"⟲ compaction failed: the history is unchanged ({FAILURE})" in marker
    assert "<details" not in marker


def test_the_originals_are_one_click_away_in_a_browser(page: Any, store: Store) -> None:
    with serving(store.url) as base:
        page.goto(f"{base}/s/{store.compacted}")
        marker = page.locator(".item.compaction")
        assert marker.count() == 1
        assert "compacted turns 1–2: 5 messages" in marker.inner_text().lower()
        assert marker.locator(".summary").is_visible() and "the two answers" in marker.inner_text()
        original = marker.locator(".original").first
        assert not original.is_visible()
        marker.locator("details.originals > summary").click()
        assert original.is_visible() and "Note these facts" in original.inner_text()
        assert page.evaluate("document.querySelectorAll('.item.compaction b').length") == 0


def test_the_live_stream_sends_the_marker_at_the_checkpoint(store: Store) -> None:
    app = create_app(lambda: open_store(store.url), poll_interval=0.02)
    with TestClient(app) as client:
        events = client.get(f"/api/sessions/{store.compacted}").json()["events"]
        start = next(e["seq"] for e in events if e["type"] == "compaction/start")
        with client.stream("GET", f"/s/{store.compacted}/live", params={"from": start}) as response:
            body = "".join(response.iter_text())
    frames = [orjson.loads(f.split("data: ", 1)[1]) for f in body.split("\n\n") if "event: append" in f]
    (marker,) = [f for f in frames if "item compaction" in f["items"]]
    assert marker["type"] == "user/message" and "⟲ compacted turns 1–2: 5 messages" in marker["items"]
    assert '<details class="originals">' in marker["items"] and "Note these facts" in marker["items"]
    assert "item prompt" not in marker["items"]

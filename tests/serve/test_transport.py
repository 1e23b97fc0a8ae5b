"""dsh serve without a socket: ReplayTransport (in-process replay) and RedirectTransport (record
through the proxy), driven by the real sync openai SDK. The async client over both transports
is covered by every test of test_replay_scenarios.py."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from dsh.serve import RedirectTransport, ReplayServer, ReplayTransport
from dsh.serve.pytest_plugin import BackgroundServer
from dsh.serve.record import RecordServer
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.serve.helpers import SCENARIOS, client_deltas, expected_deltas, recorded_calls, slowed, wire_view

TOOL_TURN = SCENARIOS / "tool-call-turn"
PARALLEL = SCENARIOS / "subagent-parallel-distinct"


def _sync_client(server: ReplayServer, **headers: str) -> openai.OpenAI:
    http = httpx2.Client(transport=ReplayTransport(server))
    return openai.OpenAI(api_key="unused", max_retries=0, default_headers=headers or None, http_client=http)


def test_a_sync_client_replays_without_the_server_listening() -> None:
    calls = recorded_calls(TOOL_TURN)
    server = ReplayServer(TOOL_TURN)  # never started: no socket is bound
    with _sync_client(server) as client:
        for body, chunks in calls:
            received = list(client.chat.completions.create(**body, stream=True))
            assert client_deltas(received) == expected_deltas(chunks)
        with pytest.raises(openai.ConflictError, match="exhausted"):  # refused, as over HTTP
            client.chat.completions.create(**calls[0][0])
    report = server.report()
    assert report["unconsumed"] == [] and len(report["refused"]) == 1


def test_a_changed_prompt_reaches_the_sync_client_as_409_with_the_diff() -> None:
    body, _ = recorded_calls(TOOL_TURN)[0]
    changed = json.loads(json.dumps(body))
    prompt = next(m for m in changed["messages"] if "echo SNAPSHOT_OK" in str(m.get("content")))
    prompt["content"] = "Use the bash tool to run exactly: echo SOMETHING_ELSE."
    server = ReplayServer(TOOL_TURN)
    with _sync_client(server) as client, pytest.raises(openai.ConflictError) as caught:
        client.chat.completions.create(**changed, stream=True)
    error = caught.value.body
    assert isinstance(error, dict) and error["session"] == "session.jsonl" and error["call"] == 1
    assert "+    Use the bash tool to run exactly: echo SOMETHING_ELSE." in error["diff"]
    assert server.report()["unconsumed"] == ["session.jsonl"]


def test_sync_clients_on_threads_share_one_server() -> None:
    server = ReplayServer(PARALLEL)
    work = {"session.1": recorded_calls(PARALLEL, "session.1.jsonl")[0],
            "session.2": recorded_calls(PARALLEL, "session.2.jsonl")[0]}  # fmt: skip
    got: dict[str, Any] = {}

    def run(name: str) -> None:
        with _sync_client(server, **{"X-Dsh-Session": name}) as client:
            got[name] = list(client.chat.completions.create(**work[name][0], stream=True))

    threads = [threading.Thread(target=run, args=(name,)) for name in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for name, (_, chunks) in work.items():
        assert client_deltas(got[name]) == expected_deltas(chunks)
    served = {s["session"]: s["served"] for s in server.report()["sessions"]}
    assert served == {"session.jsonl": 0, "session.1.jsonl": 1, "session.2.jsonl": 1}


def test_the_sync_stream_keeps_the_recorded_pacing(tmp_path: Path) -> None:
    target = slowed(TOOL_TURN, tmp_path / "slow", 30)
    body, chunks = recorded_calls(TOOL_TURN)[0]
    with _sync_client(ReplayServer(target, speed=2)) as client:
        started = time.perf_counter()
        stream = client.chat.completions.create(**body, stream=True)
        arrivals = [time.perf_counter() - started for _ in stream]
    assert arrivals[-1] >= 0.030 * (len(chunks) - 1) / 2 * 0.9  # every recorded 30 ms gap, halved


def test_record_through_the_redirect_then_replay_in_process(tmp_path: Path) -> None:
    """The same client code (default base URL) records through the proxy and replays offline."""
    replies = [stream_reply(text=["Hel", "lo ", "there"]), stream_reply(text=["Fine, ", "thanks."])]
    turns = ["Hi.", "How are you?"]

    def conversation(http: httpx2.Client) -> list[list[Any]]:
        messages: list[Any] = []
        out = []
        with openai.OpenAI(api_key="sk-redirect-SECRET", max_retries=0, http_client=http) as client:
            for turn in turns:
                messages.append({"role": "user", "content": turn})
                chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True))
                out.append(chunks)
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                messages.append({"role": "assistant", "content": text})
        return out

    with OpenAICompatServer(replies) as upstream:
        proxy = BackgroundServer(RecordServer(upstream.base_url, tmp_path / "rec"))
        proxy.start()
        try:
            recorded = conversation(httpx2.Client(transport=RedirectTransport(proxy.base_url)))
        finally:
            proxy.stop()
        assert len(upstream.requests) == 2
    assert b"sk-redirect-SECRET" not in (tmp_path / "rec" / "session.jsonl").read_bytes()
    server = ReplayServer(tmp_path / "rec")
    replayed = conversation(httpx2.Client(transport=ReplayTransport(server)))
    assert [wire_view(c) for c in replayed] == [wire_view(c) for c in recorded]
    assert [len(c) for c in replayed] == [len(c) for c in recorded]
    assert server.report()["ok"]

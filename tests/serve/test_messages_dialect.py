"""The Anthropic Messages API through dsh serve, with the real ``anthropic`` SDK: record from a
scripted upstream (streamed and whole, a tool use round trip, thinking blocks with their
signatures), replay with the upstream gone — every SDK event the same — and a changed
request refused as ``anthropic.ConflictError``, once (no retry)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from dsh.http1 import Request
from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.serve.transport import ReplayTransport
from tests.serve.dialect_upstreams import Upstream, messages_script

KEY = "sk-ant-secret-0123456789"
TOOLS: list[Any] = [
    {
        "name": "lookup_capital",
        "description": "The capital city of a country.",
        "input_schema": {"type": "object", "properties": {"country": {"type": "string"}}},
    }
]
THINKING: Any = {"type": "enabled", "budget_tokens": 1024}
ASK = "What is the capital of France?"


def _root(base_url: str) -> str:
    """The anthropic SDK's base URL (it adds ``/v1/messages`` itself)."""
    return base_url.removesuffix("/v1")


async def _conversation(client: Any, *, system: str = "Answer with tools.") -> list[Any]:
    """A streamed call that uses the tool, its result sent back with the thinking block (streamed),
    then a whole follow-up: every SDK event and body, dumped."""
    seen: list[Any] = []
    messages: list[Any] = [{"role": "user", "content": ASK}]
    for _ in range(2):
        async with client.messages.stream(
            model="claude-test",
            max_tokens=2048,
            system=system,
            messages=messages,
            tools=TOOLS,
            thinking=THINKING,
        ) as stream:
            seen += [event.model_dump() for event in [e async for e in stream]]
            final = await stream.get_final_message()
        seen.append(final.model_dump())
        if final.stop_reason != "tool_use":
            break
        use = next(b for b in final.content if b.type == "tool_use")
        messages += [
            {"role": "assistant", "content": [b.model_dump() for b in final.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Paris"}]},
        ]
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in final.content]},
        {"role": "user", "content": "And in one word?"},
    ]
    whole = await client.messages.create(
        model="claude-test", max_tokens=2048, system=system, messages=messages, thinking=THINKING
    )
    seen.append(whole.model_dump())
    return seen


async def _through(base_url: str) -> list[Any]:
    async with anthropic.AsyncAnthropic(base_url=_root(base_url), api_key=KEY, max_retries=0) as client:
        return await _conversation(client)


async def _record(directory: Path) -> tuple[Path, list[Any], Upstream]:
    async with Upstream(messages_script) as upstream, RecordServer(upstream.base_url, directory) as proxy:
        seen = await _through(proxy.base_url)
    return directory, seen, upstream


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], Upstream]:
    """One recording for the module (the upstream is gone once it is made)."""
    return asyncio.run(_record(tmp_path_factory.mktemp("messages") / "rec"))


async def test_a_replay_answers_every_event_as_recorded(recorded: tuple[Path, list[Any], Upstream]) -> None:
    directory, seen, upstream = recorded
    assert len(upstream.requests) == 3
    headers = upstream.requests[0][0]
    assert KEY in headers.get("x-api-key", headers.get("authorization", "")) and headers["anthropic-version"]
    thinking = [e for e in seen if e.get("type") == "signature"]
    assert thinking and thinking[0]["signature"] == "sig-XYZ=="
    async with (
        ReplayServer(directory) as server,
        anthropic.AsyncAnthropic(
            base_url=_root(server.base_url), api_key="sk-other", max_retries=0
        ) as client,
    ):
        replayed = await _conversation(client)
        report = server.report()
    assert replayed == seen
    assert report["ok"], report
    assert report["sessions"][0]["dialect"] == "messages" and report["sessions"][0]["served"] == 3


def test_in_process_replay_serves_the_sync_client_too(recorded: tuple[Path, list[Any], Upstream]) -> None:
    directory, seen, _ = recorded
    server = ReplayServer(directory)
    http = httpx2.Client(transport=ReplayTransport(server))
    client = anthropic.Anthropic(base_url="http://replay.invalid", api_key="x", http_client=http)
    with (
        client,
        client.messages.stream(
            model="claude-test",
            max_tokens=2048,
            system="Answer with tools.",
            messages=[{"role": "user", "content": ASK}],
            tools=TOOLS,
            thinking=THINKING,
        ) as stream,
    ):
        events = [event.model_dump() for event in stream]
    assert events == seen[: len(events)]
    assert server.report()["sessions"][0]["served"] == 1


async def test_a_changed_request_is_a_conflict_sent_once(recorded: tuple[Path, list[Any], Upstream]) -> None:
    directory, _, _ = recorded
    async with (
        ReplayServer(directory) as server,
        anthropic.AsyncAnthropic(base_url=_root(server.base_url), api_key="x", max_retries=2) as client,
    ):
        with pytest.raises(anthropic.ConflictError) as caught:
            await _conversation(client, system="Answer WITHOUT tools.")
        refused = server.report()["refused"]
    assert len(refused) == 1 and refused[0]["what"] == "the system prompt"
    assert caught.value.response.headers["x-should-retry"] == "false"
    body: Any = caught.value.body
    assert body["type"] == "error" and body["error"]["type"] == "dsh_replay_divergence"


def test_the_recording_keeps_thinking_signatures_and_no_key(
    recorded: tuple[Path, list[Any], Upstream],
) -> None:
    directory, _, _ = recorded
    for path in directory.iterdir():
        assert KEY not in path.read_text(), path
    events = [json.loads(line) for line in (directory / "session.jsonl").read_text().splitlines()[1:]]
    replies = [e["data"] for e in events if e["type"] == "assistant/message" and "wire" in e["data"]]
    assert replies[0]["message"]["content"][0] == {
        "type": "reasoning",
        "text": "Let me think.",
        "signature": "sig-XYZ==",
    }
    assert replies[0]["message"]["content"][1]["arguments"] == '{"country":"France"}'
    assert replies[0]["usage"] == {"inputTokens": 25, "outputTokens": 17, "cacheReadTokens": 3}
    assert [e["type"] for e in events].count("tool/result") == 1


def test_replay_paces_the_recorded_events(recorded: tuple[Path, list[Any], Upstream]) -> None:
    directory, _, upstream = recorded
    body = upstream.requests[0][1]
    events = [json.loads(line) for line in (directory / "session.jsonl").read_text().splitlines()[1:]]
    wire = next(e["data"]["wire"] for e in events if "wire" in e["data"])
    assert len(wire["dt"]) == len(wire["events"]) - 1 and sum(wire["dt"]) > 0
    reply = ReplayServer(directory, speed=4).answer(
        Request("POST", "/v1/messages", {}, json.dumps(body).encode())
    )
    assert reply.paced is not None
    assert [round(p, 4) for p, _ in reply.paced] == [0.0, *(round(d / 1000 / 4, 4) for d in wire["dt"])]
    assert [piece.split(b"\n", 1)[0] for _, piece in reply.paced] == [
        f"event: {n}".encode() for n, _ in wire["events"]
    ]

"""dsh serve replay of recordings made by dsh's own loop, driven by the real openai SDK.

Every test that drives a client runs twice: over HTTP on 127.0.0.1 and in-process through
``ReplayTransport`` (no socket); both must behave alike."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from dsh.serve import ReplayServer, ReplayTransport
from dsh.serve.http import Reply
from tests.serve.helpers import (
    SCENARIOS,
    client_deltas,
    control,
    expected_deltas,
    recorded_calls,
    slowed,
    start_serve,
    stop,
)

TOOL_TURN = SCENARIOS / "tool-call-turn"
PARALLEL = SCENARIOS / "subagent-parallel-distinct"


@pytest.fixture(params=["http", "in-process"])
def via(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _client(server: ReplayServer, via: str, **headers: str) -> openai.AsyncOpenAI:
    if via == "http":
        return openai.AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0,
                                  default_headers=headers or None)  # fmt: skip
    http = httpx2.AsyncClient(transport=ReplayTransport(server))
    return openai.AsyncOpenAI(api_key="unused", max_retries=0, default_headers=headers or None,
                              http_client=http)  # fmt: skip


async def _stream(client: openai.AsyncOpenAI, body: dict[str, Any]) -> list[Any]:
    stream = await client.chat.completions.create(**body, stream=True)
    return [chunk async for chunk in stream]


async def test_streamed_calls_get_the_recorded_deltas_in_order(via: str) -> None:
    calls = recorded_calls(TOOL_TURN)
    async with ReplayServer(TOOL_TURN) as server:
        async with _client(server, via) as client:
            for body, chunks in calls:
                received = await _stream(client, body)
                assert client_deltas(received) == expected_deltas(chunks)
                finish = [
                    c.choices[0].finish_reason for c in received if c.choices and c.choices[0].finish_reason
                ]
                last = chunks[-1]
                assert last["type"] == "finish"
                kind = last["reason"]["kind"]
                assert finish == [{"stop": "stop", "tool-calls": "tool_calls"}[kind]]
            with pytest.raises(openai.ConflictError, match="exhausted"):
                await client.chat.completions.create(**calls[0][0], stream=True)
        report = server.report()
    assert report["sessions"][0]["served"] == 2
    assert report["unconsumed"] == []
    assert len(report["refused"]) == 1


async def test_tool_call_ids_and_names_arrive_once_per_call(via: str) -> None:
    body, _ = recorded_calls(TOOL_TURN)[0]
    async with ReplayServer(TOOL_TURN) as server, _client(server, via) as client:
        received = await _stream(client, body)
    calls = [call for c in received for ch in c.choices for call in ch.delta.tool_calls or ()]
    assert [(c.id, c.function.name if c.function else None) for c in calls][:2] == [
        ("call_bash_1", "bash"),
        (None, None),
    ]


async def test_non_streaming_requests_get_one_completion(via: str) -> None:
    calls = recorded_calls(TOOL_TURN)
    async with ReplayServer(TOOL_TURN) as server, _client(server, via) as client:
        first = await client.chat.completions.create(**calls[0][0])
        second = await client.chat.completions.create(**calls[1][0])
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    assert message.tool_calls[0].function.name == "bash"
    assert json.loads(message.tool_calls[0].function.arguments)["command"] == "echo SNAPSHOT_OK"
    assert second.choices[0].message.content == "DONE"
    assert second.usage is not None


async def test_a_changed_prompt_gets_409_with_the_diff(via: str) -> None:
    body, _ = recorded_calls(TOOL_TURN)[0]
    changed = json.loads(json.dumps(body))
    prompt = next(m for m in changed["messages"] if "echo SNAPSHOT_OK" in str(m.get("content")))
    prompt["content"] = "Use the bash tool to run exactly: echo SOMETHING_ELSE."
    async with ReplayServer(TOOL_TURN) as server:
        async with _client(server, via) as client:
            with pytest.raises(openai.ConflictError) as caught:
                await client.chat.completions.create(**changed, stream=True)
        report = server.report()
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["session"] == "session.jsonl"
    assert error["call"] == 1
    assert "user message 1" in error["what"]
    assert "+    Use the bash tool to run exactly: echo SOMETHING_ELSE." in error["diff"]
    assert "-    Use the bash tool to run exactly: echo SNAPSHOT_OK" in error["diff"]
    assert report["refused"] and not report["ok"]


async def test_a_later_call_that_rewrites_an_earlier_message_gets_409(via: str) -> None:
    """The server reuses what it read of the previous request only where the wire is equal."""
    (first, _), (second, _) = recorded_calls(TOOL_TURN)
    rewritten = json.loads(json.dumps(second))
    user = next(m for m in rewritten["messages"] if m["role"] == "user")
    user["content"] = "Use the bash tool to run exactly: echo REWRITTEN."
    async with ReplayServer(TOOL_TURN) as server, _client(server, via) as client:
        await _stream(client, first)
        with pytest.raises(openai.ConflictError) as caught:
            await client.chat.completions.create(**rewritten, stream=True)
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["call"], "user message 1" in error["what"]) == (2, True)
    assert "+    Use the bash tool to run exactly: echo REWRITTEN." in error["diff"]


async def test_a_changed_tool_schema_gets_409(via: str) -> None:
    body, _ = recorded_calls(TOOL_TURN)[0]
    changed = json.loads(json.dumps(body))
    changed["tools"][0]["function"]["description"] = "something else"
    async with ReplayServer(TOOL_TURN) as server, _client(server, via) as client:
        with pytest.raises(openai.ConflictError, match="the schema of tool bash"):
            await client.chat.completions.create(**changed)


async def test_concurrent_conversations_route_by_header(via: str) -> None:
    alpha = recorded_calls(PARALLEL, "session.1.jsonl")[0]
    beta = recorded_calls(PARALLEL, "session.2.jsonl")[0]
    async with ReplayServer(PARALLEL) as server:
        async with (
            _client(server, via, **{"X-Dsh-Session": "session.2"}) as two,
            _client(server, via, **{"X-Dsh-Session": "session.1"}) as one,
        ):
            got = await asyncio.gather(_stream(two, beta[0]), _stream(one, alpha[0]))
        report = server.report()
    assert client_deltas(got[0]) == expected_deltas(beta[1])
    assert client_deltas(got[1]) == expected_deltas(alpha[1])
    served = {s["session"]: s["served"] for s in report["sessions"]}
    assert served == {"session.jsonl": 0, "session.1.jsonl": 1, "session.2.jsonl": 1}


async def test_a_session_header_naming_no_recording_gets_409(via: str) -> None:
    """The header decides: the same body routes by history without it."""
    body, _ = recorded_calls(PARALLEL)[0]
    async with ReplayServer(PARALLEL) as server:
        async with _client(server, via, **{"X-Dsh-Session": "nope"}) as client:
            with pytest.raises(openai.ConflictError, match="no recorded session is named 'nope'"):
                await client.chat.completions.create(**body, stream=True)
        async with _client(server, via) as client:
            await _stream(client, body)
    assert server.report()["sessions"][0]["served"] == 1


async def test_without_headers_requests_route_by_history(via: str) -> None:
    parent = recorded_calls(PARALLEL)
    alpha = recorded_calls(PARALLEL, "session.1.jsonl")[0]
    beta = recorded_calls(PARALLEL, "session.2.jsonl")[0]
    async with ReplayServer(PARALLEL) as server:
        async with _client(server, via) as client:
            first = await _stream(client, parent[0][0])
            got_beta, got_alpha = await asyncio.gather(_stream(client, beta[0]), _stream(client, alpha[0]))
            last = await _stream(client, parent[1][0])
        report = server.report()
    assert client_deltas(first) == expected_deltas(parent[0][1])
    assert client_deltas(got_beta) == expected_deltas(beta[1])
    assert client_deltas(got_alpha) == expected_deltas(alpha[1])
    assert client_deltas(last) == expected_deltas(parent[1][1])
    assert report["ok"]


@pytest.mark.parametrize("consume", [True, False])
def test_the_cli_exits_non_zero_when_a_script_is_not_consumed(consume: bool) -> None:
    process, base_url, token = start_serve("replay", str(TOOL_TURN), "--port", "0")
    try:
        calls = recorded_calls(TOOL_TURN)
        with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0) as client:
            for body, _ in calls if consume else calls[:1]:
                list(client.chat.completions.create(**body, stream=True))
        report = control(base_url, "report", token)
        assert report["sessions"][0]["served"] == (2 if consume else 1)
        control(base_url, "shutdown", token, method="POST")
    finally:
        out, err = stop(process)
    assert process.returncode == (0 if consume else 1), err
    if not consume:
        assert "were not served in session.jsonl" in err
    assert json.loads(out.splitlines()[-1])["unconsumed"] == ([] if consume else ["session.jsonl"])


def test_allow_unconsumed_relaxes_the_exit_code() -> None:
    process, base_url, token = start_serve("replay", str(TOOL_TURN), "--port", "0", "--allow-unconsumed")
    try:
        control(base_url, "shutdown", token, method="POST")
    finally:
        stop(process)
    assert process.returncode == 0


def _planned_pauses(monkeypatch: pytest.MonkeyPatch) -> list[list[float]]:
    """The pauses the server plans before each piece of every reply it gives (a spy)."""
    planned: list[list[float]] = []
    answer = ReplayServer._answer

    def spy(self: ReplayServer, *args: Any) -> Reply:
        reply = answer(self, *args)
        planned.append([pause for pause, _ in reply.paced or ()])
        return reply

    monkeypatch.setattr(ReplayServer, "_answer", spy)
    return planned


@pytest.mark.parametrize("speed", [1.0, 4.0])
async def test_speed_paces_the_recorded_gaps(
    tmp_path: Path, speed: float, via: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each recorded gap (40 ms here) is paused for, divided by ``speed``: the planned pauses
    say so exactly, and the stream takes at least their sum (a lower bound, which a loaded
    machine only makes easier; how much faster speed 4 is, is bench/serve_bench.py's)."""
    directory = slowed(TOOL_TURN, tmp_path / "slow", 40)
    body, chunks = recorded_calls(TOOL_TURN)[0]
    planned = _planned_pauses(monkeypatch)
    async with ReplayServer(directory, speed=speed) as server, _client(server, via) as client:
        started = time.perf_counter()
        received = await _stream(client, body)
        took = time.perf_counter() - started
    assert client_deltas(received) == expected_deltas(chunks)
    [pauses] = planned
    gap = 0.040 / speed
    assert sum(pauses) == pytest.approx(gap * (len(chunks) - 1))  # every recorded gap, once
    assert all(p / gap == pytest.approx(round(p / gap)) for p in pauses)  # a piece waits whole gaps
    assert took >= sum(pauses) * 0.9

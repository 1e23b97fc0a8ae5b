"""Record real openai SDK traffic through dsh serve record (upstream: the local test server),
then replay it with dsh serve replay: the client sees the same chunks, in the same order."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.store.logfile import load_log_file
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, http_error, json_response, stream_reply, wire_usage
from tests.serve.helpers import client_deltas, control, wire_view

KEY = "sk-test-SECRET-never-stored-4242"
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def _upstream(request: RecordedRequest) -> Response:
    """Answers by conversation: a tool call first, then text; ALPHA/BETA by prompt."""
    messages = request.messages
    last = messages[-1]
    text = request.text()
    if not (request.json or {}).get("stream"):
        return json_response(200, _completion(last.get("role") == "tool"))
    if last.get("role") == "tool":
        return stream_reply(text=["It is ", "sunny in ", "Paris."], usage=wire_usage(30, 5, cached=10))
    if "weather" in text:
        call = WireToolCall.split("call_w1", "get_weather", '{"city": "Paris"}', 3)
        return stream_reply(tool_calls=[call], usage=wire_usage(20, 7))
    if "ALPHA" in text:
        return stream_reply(text=["AL", "PHA"], delay=0.01)
    if "BETA" in text:
        return stream_reply(text=["BE", "T", "A"], delay=0.01)
    return stream_reply(text=["Hel", "lo ", "there"])


def _completion(after_tool: bool) -> dict[str, Any]:
    if after_tool:
        message: dict[str, Any] = {"role": "assistant", "content": "Sunny."}
    else:
        call = {"id": "call_p1", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": "chatcmpl-up", "object": "chat.completion", "created": 1764470400, "model": "test-model",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "stop" if after_tool else "tool_calls"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
    }  # fmt: skip


async def _conversation(client: openai.AsyncOpenAI, stream: bool) -> list[list[Any]]:
    """A weather conversation with one tool round trip; returns each call's chunks (or completion)."""
    messages: list[Any] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    out: list[list[Any]] = []
    for _ in range(2):
        if stream:
            chunks = [c async for c in await client.chat.completions.create(
                model="test-model", messages=messages, tools=TOOLS, stream=True,
                stream_options={"include_usage": True})]  # fmt: skip
            out.append(chunks)
            calls = [t for c in chunks for ch in c.choices for t in ch.delta.tool_calls or ()]
            text = "".join(ch.delta.content or "" for c in chunks for ch in c.choices)
            if calls:
                arguments = "".join(t.function.arguments or "" for t in calls if t.function)
                call_id, name = calls[0].id, calls[0].function.name if calls[0].function else ""
                assert isinstance(call_id, str) and isinstance(name, str)
            else:
                messages.append({"role": "assistant", "content": text})
                break
        else:
            done = await client.chat.completions.create(model="test-model", messages=messages, tools=TOOLS)
            out.append([done])
            message = done.choices[0].message
            if not message.tool_calls:
                break
            first = message.tool_calls[0]
            assert first.type == "function"
            call_id, name, arguments = first.id, first.function.name, first.function.arguments
        wire_call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [wire_call]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "sunny, 24C"})
    return out


async def _session_run(base_url: str) -> dict[str, Any]:
    """Everything the acceptance asks for, against ``base_url``."""
    results: dict[str, Any] = {}
    async with openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        results["streamed"] = await _conversation(client, stream=True)
    async with openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0,
                                  default_headers={"X-Dsh-Session": "plain"}) as client:  # fmt: skip
        results["plain"] = await _conversation(client, stream=False)

    async def one(key: str, word: str) -> list[Any]:
        headers = {"X-Dsh-Session": key, "X-Dsh-Parent": "plain"}
        async with openai.AsyncOpenAI(
            base_url=base_url, api_key=KEY, max_retries=0, default_headers=headers
        ) as c:
            stream = await c.chat.completions.create(
                model="test-model", messages=[{"role": "user", "content": f"Say {word}"}], stream=True
            )
            return [chunk async for chunk in stream]

    results["concurrent"] = await asyncio.gather(one("alpha", "ALPHA"), one("beta", "BETA"))
    return results


def _view(results: dict[str, Any]) -> dict[str, Any]:
    return {
        "streamed": [wire_view(call) for call in results["streamed"]],
        "plain": [wire_view(call) for call in results["plain"]],
        "concurrent": [wire_view(call) for call in results["concurrent"]],
    }


@pytest.fixture
async def recorded(tmp_path: Path) -> tuple[Path, dict[str, Any], int]:
    directory = tmp_path / "rec"
    async with OpenAICompatServer(handler=_upstream) as upstream:
        async with RecordServer(upstream.base_url, directory) as proxy:
            results = await _session_run(proxy.base_url)
        requests = upstream.requests
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests)
    return directory, results, len(requests)


async def test_replay_serves_the_recorded_chunks_chunk_by_chunk(
    recorded: tuple[Path, dict[str, Any], int],
) -> None:
    directory, recording, upstream_calls = recorded
    assert upstream_calls == 6
    async with ReplayServer(directory) as server:
        replayed = await _session_run(server.base_url)
        report = server.report()
    assert report["ok"], report
    assert _view(replayed) == _view(recording)
    pieces = client_deltas(replayed["streamed"][0])
    assert pieces == client_deltas(recording["streamed"][0])
    assert [kind for kind, _ in pieces] == ["arguments"] * 3
    assert "".join(value for _, value in pieces) == '{"city": "Paris"}'
    assert [c.choices[0].delta.content for c in replayed["concurrent"][1] if c.choices] == [
        c.choices[0].delta.content for c in recording["concurrent"][1] if c.choices
    ]


async def test_the_key_is_written_nowhere(recorded: tuple[Path, dict[str, Any], int]) -> None:
    directory, _, _ = recorded
    files = [p for p in directory.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"session.jsonl", "session.1.jsonl", "input.json"}
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
        assert b"SECRET" not in path.read_bytes(), path


async def test_sessions_are_v2_logs_with_parents_and_tool_results(
    recorded: tuple[Path, dict[str, Any], int],
) -> None:
    directory, _, _ = recorded
    logs = {p.name: load_log_file(p) for p in sorted(directory.glob("session*.jsonl"))}
    assert set(logs) == {"session.jsonl", "session.1.jsonl", "session.2.jsonl", "session.3.jsonl"}
    assert all(log.version == 2 for log in logs.values())
    first = logs["session.jsonl"].events
    types = [e.type for e in first]
    assert types.count("assistant/message") == 2
    assert "tool/result" in types and "tool/call" in types and types[-1] == "turn/end"
    result = next(e for e in first if e.type == "tool/result")
    assert result.data["message"]["content"][0]["toolCallId"] == "call_w1"
    settlement = next(e for e in first if e.type == "assistant/message")
    assert [c["type"] for c in settlement.data["stream"]["chunks"]].count("tool-call-delta") == 3
    assert len(settlement.data["stream"]["dt"]) == len(settlement.data["stream"]["chunks"]) - 1
    keys = [(e.type, list(e.data)) for e in first if e.type != "user/message"]
    step = [("step/start", ["turn", "step"])]
    message = [("assistant/message", ["turn", "step", "message", "usage", "wireUsage", "stream"])]
    assert keys == [
        ("turn/start", ["turn"]),
        ("request/header", ["header", "reason"]),
        *step,
        *message,
        ("tool/call", ["turn", "step", "callId", "name", "arguments"]),
        ("step/end", ["turn", "step"]),
        ("tool/result", ["turn", "step", "message"]),
        *step,
        *message,
        ("step/end", ["turn", "step"]),
        ("turn/end", ["turn", "reason"]),
    ]  # the logged key order, as the recorder wrote it before its payloads were typed
    plain = logs["session.1.jsonl"].header
    children = [logs["session.2.jsonl"].header, logs["session.3.jsonl"].header]
    assert all(c.parent_session == plain.id and c.delegation_depth == 1 for c in children)


async def test_a_changed_prompt_after_recording_gets_409(recorded: tuple[Path, dict[str, Any], int]) -> None:
    directory, _, _ = recorded
    async with (
        ReplayServer(directory) as server,
        openai.AsyncOpenAI(
            base_url=server.base_url, max_retries=0, api_key="x", default_headers={"X-Dsh-Session": "alpha"}
        ) as client,
    ):
        with pytest.raises(openai.ConflictError) as caught:
            await client.chat.completions.create(
                model="test-model", messages=[{"role": "user", "content": "Say GAMMA"}], stream=True
            )
        assert not server.report()["ok"]
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["session"] == "session.2.jsonl" and body["call"] == 1
    assert "-    Say ALPHA" in body["diff"] and "+    Say GAMMA" in body["diff"]


def test_recorded_directories_import_as_dsh_sessions(
    recorded: tuple[Path, dict[str, Any], int], tmp_path: Path
) -> None:
    directory, _, _ = recorded
    files = [str(p) for p in sorted(directory.glob("session*.jsonl"))]
    store = f"sqlite:{tmp_path / 's.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "dsh.cli", "sessions", "import", *files, "--json", "--store", store],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)
    assert len(imported) == 4


def test_the_record_cli_proxies_and_writes_the_directory(tmp_path: Path) -> None:
    directory = tmp_path / "cli-rec"
    with OpenAICompatServer(handler=_upstream) as upstream:
        command = [sys.executable, "-m", "dsh.cli", "serve", "record", str(directory)]
        process = subprocess.Popen(
            [*command, "--upstream", upstream.base_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert " on http://127.0.0.1:" in line, line
            base_url = line.strip().rsplit(" on ", 1)[1]
            with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
                hello: list[Any] = [{"role": "user", "content": "hi"}]
                chunks = list(client.chat.completions.create(model="test-model", messages=hello, stream=True))
            token = process.stdout.readline().split("control token ", 1)[1].split()[0]
            control(base_url, "shutdown", token, method="POST")
            out, err = process.communicate(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 0, err
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello there"
    assert json.loads(out.splitlines()[-1])["sessions"][0]["events"] > 0
    assert KEY.encode() not in (directory / "session.jsonl").read_bytes()
    assert load_log_file(directory / "session.jsonl").version == 2


async def test_a_recorded_http_error_replays_with_its_status_and_body(tmp_path: Path) -> None:
    directory = tmp_path / "err"
    responses = [http_error(429, "slow down", retry_after="2"), stream_reply(text=["o", "k"])]
    async with OpenAICompatServer(responses) as upstream, RecordServer(upstream.base_url, directory) as proxy:
        recorded = await _two_tries(proxy.base_url)
    async with ReplayServer(directory) as server:
        replayed = await _two_tries(server.base_url)
        assert server.report()["ok"]
    assert recorded == replayed == (429, "slow down", "ok")
    events = load_log_file(directory / "session.jsonl").events
    settled = [(e.type, list(e.data)) for e in events if e.type.startswith("assistant/")]
    assert settled == [
        ("assistant/attempt", ["turn", "step", "failure", "stream"]),
        ("assistant/message", ["turn", "step", "message", "usage", "wireUsage", "stream"]),
    ]


async def _two_tries(base_url: str) -> tuple[int, str, str]:
    hello: list[Any] = [{"role": "user", "content": "hi"}]
    async with openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        with pytest.raises(openai.RateLimitError) as caught:
            await client.chat.completions.create(model="m", messages=hello, stream=True)
        stream = await client.chat.completions.create(model="m", messages=hello, stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    body = caught.value.body
    message = body.get("message") if isinstance(body, dict) else None
    return caught.value.status_code, str(message), text

"""The loop end to end over real HTTP: the adapter, the test server, a real store, real tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import DEEPSEEK_STYLE, Faults, Response, WireToolCall, http_error, stream_reply
from dsh.tools.registry import ToolRegistry, builtin_registry
from tests.invariants import check_log_invariants
from tests.loop.test_loop import _BarrierTool

KEY = "sk-test-SECRET-KEY-must-not-leak"


async def _run(
    tmp_path: Path, responses: list[Response], tools: ToolRegistry | None = None, **server_kw: Any
) -> tuple[Agent, Any, OpenAICompatServer, SqliteEventStore]:
    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(responses, **server_kw) as server:
        model = OpenAICompatModel(base_url=server.base_url, api_key=KEY, idle_timeout=0.5)
        agent = await Agent.create(
            store,
            model=model,
            tools=tools or builtin_registry(),
            config=AgentConfig(model="deepseek-chat", retry=NO_DELAY),
            cwd=tmp_path,
        )
        try:
            result = await agent.run_turn("do the thing")
        finally:
            await model.aclose()
    return agent, result, server, store


async def _stored(agent: Agent, store: SqliteEventStore) -> list[Any]:
    loaded = await store.load(agent.id)
    await store.close()
    return list(loaded.events)


async def test_two_step_tool_turn_over_http(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("the note\n")
    args = json.dumps({"file_path": "note.txt"})
    first = stream_reply(
        reasoning=["I should ", "read ", "the note."],
        tool_calls=[WireToolCall.split("call_read", "read", args, 5)],
    )
    second = stream_reply(text=["The note ", "says: ", "the note."])
    agent, result, server, store = await _run(tmp_path, [first, second])
    assert result.ok and result.text == "The note says: the note."
    events = await _stored(agent, store)
    assert [e.type for e in events] == [
        "turn/start", "step/start", "user/message", "request/header", "assistant/message",
        "tool/call", "tool/result", "step/end", "step/start", "assistant/message", "step/end",
        "turn/end",
    ]  # fmt: skip
    check_log_invariants(events)
    chunks = events[4].data["stream"]["chunks"]
    sent_args = [c["argumentsDelta"] for c in chunks if c["type"] == "tool-call-delta"]
    assert sent_args == list(WireToolCall.split("call_read", "read", args, 5).parts)
    assert [c["text"] for c in chunks if c["type"] == "reasoning-delta"] == [
        "I should ",
        "read ",
        "the note.",
    ]
    assert chunks[-1] == {"type": "finish", "reason": {"kind": "tool-calls"}}
    assert events[5].data["arguments"] == args
    texts = [c["text"] for c in events[9].data["stream"]["chunks"] if c["type"] == "text-delta"]
    assert texts == ["The note ", "says: ", "the note."]
    history = server.requests[1].json["messages"]
    assistant = next(m for m in history if m["role"] == "assistant")
    assert assistant["reasoning_content"] == "I should read the note."
    assert assistant["content"] == ""
    assert assistant["tool_calls"][0]["function"] == {"name": "read", "arguments": args}
    tool = next(m for m in history if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_read" and "the note" in tool["content"]


async def test_deepseek_wire_style_assembles_the_same(tmp_path: Path) -> None:
    args = json.dumps({"pattern": "*.txt"})
    first = stream_reply(tool_calls=[WireToolCall.split("c1", "glob", args, 3)], style=DEEPSEEK_STYLE)
    second = stream_reply(text=["ok"], style=DEEPSEEK_STYLE)
    agent, result, _, store = await _run(tmp_path, [first, second])
    assert result.ok
    events = await _stored(agent, store)
    call = next(e for e in events if e.type == "tool/call")
    assert call.data["arguments"] == args and call.data["callId"] == "c1"


async def test_concurrency_safe_calls_overlap_over_http(tmp_path: Path) -> None:
    probe = _BarrierTool(2, delays={"one": 0.05})
    calls = [
        WireToolCall.split("p1", "probe", json.dumps({"name": "one"}), 2),
        WireToolCall.split("p2", "probe", json.dumps({"name": "two"}), 2),
    ]
    agent, result, _, store = await _run(
        tmp_path, [stream_reply(tool_calls=calls), stream_reply(text="ok")], tools=ToolRegistry([probe])
    )
    assert result.ok and probe.max_running == 2
    events = await _stored(agent, store)
    ids = [e.data["message"]["content"][0]["toolCallId"] for e in events if e.type == "tool/result"]
    assert ids == ["p1", "p2"]


async def test_rate_limit_then_success_retries_in_the_same_step(tmp_path: Path) -> None:
    agent, result, server, store = await _run(
        tmp_path, [http_error(429, "slow down", retry_after="0"), stream_reply(text="fine")]
    )
    assert result.ok and len(server.requests) == 2
    events = await _stored(agent, store)
    kinds = [(e.type, e.data.get("step")) for e in events if e.type.startswith("assistant/")]
    assert kinds == [("assistant/attempt", 1), ("assistant/message", 1)]
    assert events[4].data["failure"]["code"] == "RATE_LIMIT"
    assert [e.type for e in events].count("step/start") == 1


async def test_auth_failure_is_not_retried_and_never_leaks_the_key(tmp_path: Path) -> None:
    agent, result, server, store = await _run(tmp_path, [http_error(401, f"bad key {KEY}")])
    assert len(server.requests) == 1
    assert result.reason["kind"] == "error" and result.reason["failure"]["code"] == "AUTH"
    assert KEY not in result.reason["failure"]["message"]
    events = await _stored(agent, store)
    assert events[-1].data["reason"]["failure"]["code"] == "AUTH"
    assert KEY.encode() not in (tmp_path / "s.db").read_bytes()
    assert KEY not in repr(agent.model)
    check_log_invariants(events)


FAULTS = {
    "drop": (Faults(drop_after=3), "CONNECTION"),
    "malformed": (Faults(malformed_at=2), "MALFORMED_RESPONSE"),
    "no-done": (Faults(omit_done=True), "STREAM_CLOSED"),
    "stall": (Faults(stall_after=3, stall_seconds=None), "TIMEOUT"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_transport_faults_settle_as_attempts_and_retry(tmp_path: Path, fault: str) -> None:
    faults, code = FAULTS[fault]
    broken = stream_reply(text=["part", "ial ", "answer", " here"], faults=faults)
    agent, result, _, store = await _run(tmp_path, [broken, stream_reply(text="whole")])
    assert result.ok and result.text == "whole", result.reason
    events = await _stored(agent, store)
    attempt = next(e for e in events if e.type == "assistant/attempt")
    assert attempt.data["failure"]["code"] == code
    partial = [c.get("text") for c in attempt.data["stream"]["chunks"] if c["type"] == "text-delta"]
    if fault != "malformed":
        assert partial and partial[0] == "part"
    assert attempt.data["stream"]["chunks"][-1]["type"] == "finish"
    assert [e.type for e in events].count("assistant/message") == 1
    check_log_invariants(events)


async def test_stream_without_finish_reason_is_never_the_answer(tmp_path: Path) -> None:
    truncated = stream_reply(text=["trunc", "ated"], finish_reason=None, usage=None)
    agent, result, _, store = await _run(tmp_path, [truncated, stream_reply(text="complete")])
    assert result.ok and result.text == "complete"
    events = await _stored(agent, store)
    attempt = next(e for e in events if e.type == "assistant/attempt")
    assert attempt.data["failure"]["code"] == "STREAM_CLOSED"


async def test_cancel_over_http_mid_stream_keeps_the_store_consistent(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    stall = stream_reply(text=["Hello", " wor", "ld"], faults=Faults(stall_after=3, stall_seconds=None))
    async with OpenAICompatServer([stall]) as server:
        model = OpenAICompatModel(base_url=server.base_url, api_key=KEY)
        agent = await Agent.create(
            store, model=model, tools=builtin_registry(), config=AgentConfig(model="m"), cwd=tmp_path
        )
        task = asyncio.create_task(agent.run_turn("hi"))
        while not server.requests:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await model.aclose()
    events = await _stored(agent, store)
    check_log_invariants(events)
    message = next(e for e in events if e.type == "assistant/message")
    assert message.data["interrupted"] is True
    assert events[-1].data["reason"]["kind"] == "aborted"

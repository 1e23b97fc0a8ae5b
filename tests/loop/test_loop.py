"""The agent loop through its public API: a ScriptedModel, a real store, real tools."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from dsh.events.chunks import RETRYABLE_CODES
from dsh.loop import NO_DELAY, Agent, AgentConfig, Feed, RetryPolicy
from dsh.model.scripted import (
    HANG,
    Call,
    ScriptedModel,
    error_reply,
    text_reply,
    tool_call_reply,
    tool_calls_reply,
)
from dsh.store.memory import MemoryEventStore
from dsh.store.sqlite import SqliteEventStore
from dsh.tools import ToolContext, ToolOutput
from dsh.tools.registry import ToolRegistry, builtin_registry
from tests.invariants import check_log_invariants
from tests.patience import patience, until


def _config(**kw: Any) -> AgentConfig:
    return AgentConfig(model="test-model", **{"retry": NO_DELAY, **kw})


async def _agent(tmp_path: Path, scripts: Any, tools: ToolRegistry | None = None, **kw: Any) -> Agent:
    return await Agent.create(
        MemoryEventStore(),
        model=ScriptedModel(scripts),
        tools=tools or builtin_registry(),
        config=_config(**kw),
        cwd=tmp_path,
    )


def _types(agent: Agent) -> list[str]:
    return [e.type for e in agent.session.events]


async def test_text_turn_event_order_and_exact_stream(tmp_path: Path) -> None:
    script = text_reply("PONG", deltas=3, reasoning="thinking")
    agent = await _agent(tmp_path, [script])
    result = await agent.run_turn("Reply PONG")
    assert result.ok and result.text == "PONG" and result.turn == 1
    assert _types(agent) == [
        "turn/start", "step/start", "user/message", "request/header",
        "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip
    settlement = agent.session.events[4]
    assert settlement.data["stream"]["chunks"] == script
    assert len(settlement.data["stream"]["dt"]) == len(script) - 1
    assert settlement.surface_op == "append"
    assert agent.session.events[3].data["reason"] == "initial"
    stored = await agent.store.load(agent.id)
    assert [e.to_wire() for e in stored.events] == [e.to_wire() for e in agent.session.events]
    check_log_invariants(agent.session.events)


async def test_two_step_tool_turn_runs_tool_and_sends_reasoning_back(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    model = ScriptedModel(
        [
            [*tool_call_reply("call_1", "read", '{"file_path": "a.txt"}', split=4)],
            text_reply("done"),
        ]
    )
    agent = await Agent.create(
        MemoryEventStore(), model=model, tools=builtin_registry(), config=_config(), cwd=tmp_path
    )
    result = await agent.run_turn("read a.txt")
    assert result.ok and result.text == "done"
    assert _types(agent) == [
        "turn/start", "step/start", "user/message", "request/header", "assistant/message",
        "tool/call", "tool/result", "step/end", "step/start", "assistant/message", "step/end",
        "turn/end",
    ]  # fmt: skip
    result_event = agent.session.events[6]
    block = result_event.data["message"]["content"][0]
    assert block["toolCallId"] == "call_1" and not block["isError"]
    assert "hello" in block["content"][0]["text"]
    second = model.requests[1]
    roles = [m["role"] for m in second.messages]
    assert roles == ["user", "assistant", "user"]
    assert second.messages[1]["content"][0]["type"] == "tool-call"
    check_log_invariants(agent.session.events)


async def test_reasoning_is_kept_in_history(tmp_path: Path) -> None:
    model = ScriptedModel([text_reply("one", reasoning="because"), text_reply("two")])
    agent = await Agent.create(
        MemoryEventStore(), model=model, tools=builtin_registry(), config=_config(), cwd=tmp_path
    )
    await agent.run_turn("first")
    await agent.run_turn("second")
    history = model.requests[1].messages
    assert [b["type"] for b in history[1]["content"]] == ["reasoning", "text"]
    turns = [e.data["turn"] for e in agent.session.events if e.type == "turn/start"]
    assert turns == [1, 2]
    headers = [e for e in agent.session.events if e.type == "request/header"]
    assert len(headers) == 1  # unchanged header is not logged again


async def test_retry_in_same_step_then_success(tmp_path: Path) -> None:
    assert "RATE_LIMIT" in RETRYABLE_CODES
    agent = await _agent(tmp_path, [error_reply("RATE_LIMIT", "slow down"), text_reply("ok")])
    result = await agent.run_turn("hi")
    assert result.ok and result.text == "ok"
    assert _types(agent) == [
        "turn/start", "step/start", "user/message", "request/header",
        "assistant/attempt", "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip
    attempt = agent.session.events[4]
    assert attempt.data["failure"]["code"] == "RATE_LIMIT"
    assert attempt.data["turn"] == 1 and attempt.data["step"] == 1
    assert attempt.surface_op is None


async def test_non_retryable_failure_ends_turn_with_error(tmp_path: Path) -> None:
    agent = await _agent(tmp_path, [error_reply("AUTH", "bad key")])
    result = await agent.run_turn("hi")
    assert not result.ok
    end = agent.session.events[-1]
    assert end.type == "turn/end"
    assert end.data["reason"] == {"kind": "error", "failure": {"code": "AUTH", "message": "bad key"}}
    check_log_invariants(agent.session.events)


async def test_retries_are_bounded(tmp_path: Path) -> None:
    scripts = [error_reply("SERVER", "boom") for _ in range(3)]
    agent = await _agent(tmp_path, scripts, retry=RetryPolicy(max_retries=2, initial_delay=0))
    result = await agent.run_turn("hi")
    assert result.reason["kind"] == "error" and result.reason["failure"]["code"] == "SERVER"
    assert _types(agent).count("assistant/attempt") == 3


async def test_max_tokens_drops_tool_calls_and_ends_turn(tmp_path: Path) -> None:
    script = tool_call_reply("c1", "bash", '{"command": "echo hi", "description": "x"}')
    script = [c for c in script if c.get("type") != "finish"] + [
        {"type": "finish", "reason": {"kind": "max-tokens"}}
    ]
    agent = await _agent(tmp_path, [script])
    result = await agent.run_turn("hi")
    assert result.reason == {"kind": "max-tokens"}
    assert "tool/call" not in _types(agent)
    message = next(e for e in agent.session.events if e.type == "assistant/message")
    assert all(b["type"] != "tool-call" for b in message.data["message"]["content"])


async def test_bad_tool_input_becomes_error_results_and_turn_continues(tmp_path: Path) -> None:
    calls = [
        Call("c1", "read", "{not json"),
        Call("c2", "nope", "{}"),
        Call("c3", "read", '{"offset": "x"}'),
        Call("c4", "read", '{"file_path": "../../etc/passwd"}'),
    ]
    agent = await _agent(tmp_path, [tool_calls_reply(calls), text_reply("fine")])
    result = await agent.run_turn("go")
    assert result.ok and result.text == "fine"
    results = [e for e in agent.session.events if e.type == "tool/result"]
    assert [e.data["message"]["content"][0]["toolCallId"] for e in results] == ["c1", "c2", "c3", "c4"]
    assert all(e.data["message"]["content"][0]["isError"] for e in results)
    codes = [e.data["error"]["code"] for e in results]
    assert codes[:3] == ["INVALID_ARGUMENTS", "UNKNOWN_TOOL", "INVALID_ARGUMENTS"]
    assert "outside" in results[3].data["message"]["content"][0]["content"][0]["text"]
    check_log_invariants(agent.session.events)


class _BarrierArgs(BaseModel):
    name: str


class _BarrierTool:
    """Concurrency-safe tool that only finishes once ``n`` calls are running together."""

    def __init__(self, n: int, *, delays: dict[str, float]) -> None:
        self._n = n
        self._running = 0
        self.max_running = 0
        self._all_in = asyncio.Event()
        self._delays = delays

    name = "probe"
    description = "test probe"
    args_model = _BarrierArgs

    def is_concurrency_safe(self, args: BaseModel) -> bool:
        return True

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, _BarrierArgs)
        self._running += 1
        self.max_running = max(self.max_running, self._running)
        if self._running >= self._n:
            self._all_in.set()
        await asyncio.wait_for(self._all_in.wait(), patience(30))
        await asyncio.sleep(self._delays.get(args.name, 0))
        self._running -= 1
        return ToolOutput.text(f"probe {args.name}")


async def test_concurrency_safe_calls_overlap_and_commit_in_model_order(tmp_path: Path) -> None:
    probe = _BarrierTool(2, delays={"first": 0.05, "second": 0.0})
    registry = ToolRegistry([probe])
    calls = [Call("a", "probe", '{"name": "first"}'), Call("b", "probe", '{"name": "second"}')]
    agent = await _agent(tmp_path, [tool_calls_reply(calls), text_reply("ok")], tools=registry)
    result = await agent.run_turn("go")
    assert result.ok
    assert probe.max_running == 2
    kinds = [(e.type, e.data.get("callId")) for e in agent.session.events if e.type.startswith("tool/")]
    assert kinds == [("tool/call", "a"), ("tool/call", "b"), ("tool/result", None), ("tool/result", None)]
    results = [e for e in agent.session.events if e.type == "tool/result"]
    assert [r.data["message"]["content"][0]["toolCallId"] for r in results] == ["a", "b"]
    check_log_invariants(agent.session.events)


async def _cancelled_mid_stream(store: MemoryEventStore, tmp_path: Path) -> tuple[Agent, asyncio.Task[Any]]:
    """A turn whose model streams some text and then hangs, cancelled once the text arrived."""
    feed = Feed()
    got_text = asyncio.Event()
    feed.on_chunk(lambda sid, chunk: got_text.set() if chunk["type"] == "text-delta" else None)
    agent = await Agent.create(
        store,
        model=ScriptedModel([[*text_reply("partial answer")[:2], HANG]]),
        tools=builtin_registry(),
        config=_config(),
        cwd=tmp_path,
        feed=feed,
    )
    task = asyncio.create_task(agent.run_turn("go"))
    await asyncio.wait_for(got_text.wait(), patience(30))
    task.cancel()
    return agent, task


async def test_cancel_during_stream_settles_interrupted_and_ends_aborted(tmp_path: Path) -> None:
    store = MemoryEventStore()
    agent, task = await _cancelled_mid_stream(store, tmp_path)
    with pytest.raises(asyncio.CancelledError):
        await task
    events = agent.session.events
    message = next(e for e in events if e.type == "assistant/message")
    assert message.data["interrupted"] is True
    assert events[-1].data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    check_log_invariants(events)
    stored = await store.load(agent.id)
    assert len(stored.events) == len(events)


async def test_cancel_during_tool_aborts_started_and_unstarted_calls(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    calls = [
        Call("c1", "bash", f'{{"command": "touch {marker}; sleep 30", "description": "slow"}}'),
        Call("c2", "bash", '{"command": "echo never", "description": "never"}'),
    ]
    agent = await _agent(tmp_path, [tool_calls_reply(calls)])
    task = asyncio.create_task(agent.run_turn("go"))
    await until(marker.exists, "the slow command started", every=0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    events = agent.session.events
    results = {
        e.data["message"]["content"][0]["toolCallId"]: e.data["error"]["code"]
        for e in events
        if e.type == "tool/result"
    }
    assert results == {"c1": "ABORTED", "c2": "ABORTED_BEFORE_DISPATCH"}
    assert events[-1].type == "turn/end" and events[-1].data["reason"]["kind"] == "aborted"
    check_log_invariants(events)


async def test_resume_continues_turns_and_logs_resume_header(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    first = await Agent.create(
        store, model=ScriptedModel([text_reply("one")]), tools=builtin_registry(), config=_config(),
        cwd=tmp_path,
    )  # fmt: skip
    await first.run_turn("first")
    await store.close()
    store = SqliteEventStore(tmp_path / "s.db")
    model = ScriptedModel([text_reply("two")])
    again = await Agent.resume(store, first.id, model=model, tools=builtin_registry(), config=_config())
    result = await again.run_turn("second")
    assert result.turn == 2 and result.text == "two"
    headers = [e.data["reason"] for e in again.session.events if e.type == "request/header"]
    assert headers == ["initial", "resume"]
    assert [m["role"] for m in model.requests[0].messages] == ["user", "assistant", "user"]
    loaded = await store.load(first.id)
    check_log_invariants(loaded.events)
    await store.close()


async def test_resume_closes_a_turn_left_open_by_a_crash(tmp_path: Path) -> None:
    store = MemoryEventStore()
    agent = await _agent(tmp_path, [tool_call_reply("c1", "read", '{"file_path": "x"}')])
    agent.store = store
    await store.create(agent.session.header)
    agent.append("turn/start", {"turn": 1})
    agent.append("step/start", {"turn": 1, "step": 1})
    agent.append("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"})
    await store.append(agent.id, agent.session.events)
    resumed = await Agent.resume(
        store, agent.id, model=ScriptedModel([]), tools=builtin_registry(), config=_config()
    )
    types = [e.type for e in resumed.session.events]
    assert types[-3:] == ["tool/result", "step/end", "turn/end"]
    assert resumed.session.events[-1].data["reason"] == {"kind": "interrupted"}
    check_log_invariants(resumed.session.events)
    assert len((await store.load(agent.id)).events) == len(types)


async def test_changed_request_header_is_logged_with_reason_change(tmp_path: Path) -> None:
    registry = builtin_registry()
    agent = await _agent(tmp_path, [text_reply("one"), text_reply("two")], tools=registry)
    await agent.run_turn("first")
    registry.register(_BarrierTool(1, delays={}))
    await agent.run_turn("second")
    headers = [e.data for e in agent.session.events if e.type == "request/header"]
    assert [h["reason"] for h in headers] == ["initial", "change"]
    assert "probe" in [t["name"] for t in headers[1]["header"]["tools"]]


async def test_log_round_trips_exactly_through_sqlite(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    agent = await Agent.create(
        store, model=ScriptedModel([text_reply("é ünïcode ✓", deltas=4)]), tools=builtin_registry(),
        config=_config(), cwd=tmp_path,
    )  # fmt: skip
    await agent.run_turn("hi")
    await store.close()
    again = SqliteEventStore(tmp_path / "s.db")
    loaded = await again.load(agent.id)
    assert [e.to_wire() for e in loaded.events] == [e.to_wire() for e in agent.session.events]
    await again.close()


class _GatedStore(MemoryEventStore):
    """Holds the append that carries a ``turn/end`` until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    async def append(self, session_id: str, events: Any, *, durable: bool = True) -> None:
        if any(e.type == "turn/end" for e in events):
            self.reached.set()
            await self.release.wait()
        await super().append(session_id, events, durable=durable)


async def test_a_second_cancel_cannot_interrupt_an_aborted_turns_checkpoint(tmp_path: Path) -> None:
    store = _GatedStore()
    agent, task = await _cancelled_mid_stream(store, tmp_path)
    await asyncio.wait_for(store.reached.wait(), patience(30))  # the aborted turn's checkpoint is writing
    task.cancel()  # a second Ctrl-C while it writes
    store.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + patience(30)
    while True:
        stored = await store.load(agent.id)
        if (stored.events and stored.events[-1].type == "turn/end") or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.01)
    assert stored.events[-1].type == "turn/end"
    assert stored.events[-1].data["reason"]["kind"] == "aborted"

"""Spawn and fork end to end over real HTTP against the local OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store import EventStore
from dsh.store.jsonl import JsonlEventStore
from dsh.store.sqlite import SqliteEventStore
from dsh.subagents import standard_tools
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from tests.invariants import check_log_invariants
from tests.patience import until

StoreFactory = Callable[[Path], EventStore]
STORES: dict[str, StoreFactory] = {
    "sqlite": lambda p: SqliteEventStore(p / "s.db"),
    "jsonl": lambda p: JsonlEventStore(p / "logs"),
}


def reply(text: str, gate: int | None = None) -> Response:
    return stream_reply(text=[text[:3], text[3:]] if len(text) > 3 else text, gate=gate)


def call(*calls: tuple[str, str, dict[str, Any]]) -> Response:
    return stream_reply(
        tool_calls=[WireToolCall.split(cid, name, json.dumps(args), 3) for cid, name, args in calls]
    )


def user_texts(req: RecordedRequest) -> list[str]:
    return [str(m.get("content")) for m in req.messages if m.get("role") == "user"]


def is_child(req: RecordedRequest, marker: str) -> bool:
    return marker in user_texts(req)[-1] if user_texts(req) else False


def has_tool_messages(req: RecordedRequest) -> bool:
    return any(m.get("role") == "tool" for m in req.messages)


async def make_agent(server: OpenAICompatServer, store: EventStore, cwd: Path) -> Agent:
    model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
    return await Agent.create(
        store, model=model, tools=standard_tools(), config=AgentConfig(model="m", retry=NO_DELAY), cwd=cwd
    )


async def all_sessions(store: EventStore) -> dict[str, Any]:
    return {s.header.id: await store.load(s.header.id) for s in await store.list_sessions()}


FORK_Q = "What is the codeword? Reply with just it."


@pytest.mark.parametrize("backend", sorted(STORES))
async def test_fork_child_inherits_completed_turns_and_keeps_its_cut(tmp_path: Path, backend: str) -> None:
    seen_child: list[RecordedRequest] = []

    def handler(req: RecordedRequest) -> Response:
        texts = user_texts(req)
        if texts[-1].startswith("Remember"):
            return reply("OK")
        if texts[-1] == FORK_Q:
            seen_child.append(req)
            return reply("MARMALADE")
        if has_tool_messages(req):
            return reply("PARENT_DONE")
        return call(("call_f", "subagent_fork", {"description": "recall", "prompt": FORK_Q}))

    store = STORES[backend](tmp_path)
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_agent(server, store, tmp_path)
        await parent.run_turn("Remember: the codeword is MARMALADE. Reply OK.")
        prefix_len = parent.session.next_seq
        result = await parent.run_turn("Use subagent_fork to ask for the codeword.")
        await parent.model.aclose()
    assert result.ok and result.text == "PARENT_DONE"
    child_req = seen_child[0]
    assert "Remember: the codeword is MARMALADE. Reply OK." in user_texts(child_req)
    assert any(m.get("role") == "assistant" and m.get("content") == "OK" for m in child_req.messages)
    tool_result = next(e for e in parent.session.events if e.type == "tool/result")
    assert tool_result.data["message"]["content"][0]["content"][0]["text"] == "MARMALADE"

    (child,) = await store.children(parent.id)
    assert child.header.is_seeded and child.inherited_event_count == prefix_len
    assert child.header.delegation_depth == 1 and child.header.parent_session == parent.id
    assert child.header.origin == "subagent"
    loaded = await store.load(child.header.id)
    marker = loaded.events[prefix_len]
    assert marker.type == "session/end-seed" and marker.data == {"inherited": True}
    own = loaded.events[prefix_len:]
    assert [e.data["turn"] for e in own if e.type == "turn/start"] == [2]
    header = next(e for e in own if e.type == "request/header")
    assert header.data["reason"] == "resume"
    descriptor = next(e for e in own if e.type == "subagent/descriptor")
    assert descriptor.data["provider"] == "fork"
    assert descriptor.data["delegation"] == {"parentSession": parent.id, "callId": "call_f"}
    assert list(descriptor.data) == ["mode", "provider", "label", "delegation"]  # the original's key order
    assert list(descriptor.data["delegation"]) == ["parentSession", "callId"]
    await store.close()

    reopened = STORES[backend](tmp_path)
    again = await reopened.load(child.header.id)
    assert again.inherited_event_count == prefix_len and again.header.is_seeded
    for session in (await all_sessions(reopened)).values():
        check_log_invariants(session.events)
    await reopened.close()


async def test_spawn_child_sees_none_of_the_parent_history(tmp_path: Path) -> None:
    child_requests: list[RecordedRequest] = []

    def handler(req: RecordedRequest) -> Response:
        if is_child(req, "Say CHILD_OK"):
            child_requests.append(req)
            return reply("CHILD_OK")
        if user_texts(req)[-1].startswith("Earlier"):
            return reply("noted")
        if has_tool_messages(req):
            return reply("PARENT_DONE")
        return call(("call_s", "subagent", {"description": "probe", "prompt": "Say CHILD_OK"}))

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_agent(server, store, tmp_path)
        await parent.run_turn("Earlier turn with a secret SECRET123.")
        result = await parent.run_turn("Delegate.")
    assert result.ok and result.text == "PARENT_DONE"
    (req,) = child_requests
    assert [m["role"] for m in req.messages] == ["system", "user"]
    assert "SECRET123" not in json.dumps(req.json)
    (child,) = await store.children(parent.id)
    assert not child.header.is_seeded and child.inherited_event_count == 0
    loaded = await store.load(child.header.id)
    assert not any(e.type == "session/end-seed" for e in loaded.events)
    types = [e.type for e in loaded.events]
    assert types[:4] == ["approval/policy", "turn/start", "subagent/descriptor", "step/start"]
    assert loaded.events[0].data == {"policy": "never", "source": "delegation"}  # the original's setup
    assert loaded.events[2].data["provider"] == "spawn"
    await store.close()


async def test_mixed_spawn_then_fork_in_one_turn(tmp_path: Path) -> None:
    def handler(req: RecordedRequest) -> Response:
        texts = user_texts(req)
        if texts[-1].startswith("Remember"):
            return reply("OK")
        if texts[-1] == "Say ALPHA" and not has_tool_messages(req):
            return reply("ALPHA")
        if texts[-1] == FORK_Q and not has_tool_messages(req):
            return reply("SAFFRON" if "SAFFRON" in json.dumps(req.json) else "UNKNOWN")
        tools = [m for m in req.messages if m.get("role") == "tool"]
        if not tools:
            return call(("c1", "subagent", {"description": "alpha", "prompt": "Say ALPHA"}))
        if len(tools) == 1:
            return call(("c2", "subagent_fork", {"description": "code", "prompt": FORK_Q}))
        return reply("PARENT_DONE")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_agent(server, store, tmp_path)
        await parent.run_turn("Remember: codeword SAFFRON.")
        result = await parent.run_turn("Spawn then fork.")
    assert result.ok
    results = [
        e.data["message"]["content"][0]["content"][0]["text"]
        for e in parent.session.events
        if e.type == "tool/result"
    ]
    assert results == ["ALPHA", "SAFFRON"]
    children = sorted(await store.children(parent.id), key=lambda s: s.header.created_at)
    assert [c.header.is_seeded for c in children] == [False, True]
    assert children[1].inherited_event_count == 7
    await store.close()


async def test_two_subagents_in_one_message_are_in_flight_together(tmp_path: Path) -> None:
    def handler(req: RecordedRequest) -> Response:
        texts = user_texts(req)
        if texts[-1] in ("Say A", "Say B") and not has_tool_messages(req):
            return reply(texts[-1][-1], gate=2)
        if has_tool_messages(req):
            return reply("PARENT_DONE")
        return call(
            ("ca", "subagent", {"description": "a", "prompt": "Say A"}),
            ("cb", "subagent", {"description": "b", "prompt": "Say B"}),
        )

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_agent(server, store, tmp_path)
        result = await parent.run_turn("two at once")
        assert server.max_in_flight >= 2 and server.gate_timeouts == 0
    assert result.ok
    texts = [
        e.data["message"]["content"][0]["content"][0]["text"]
        for e in parent.session.events
        if e.type == "tool/result"
    ]
    assert texts == ["A", "B"]  # model order, whatever finished first
    await store.close()


async def test_fork_without_a_completed_turn_is_unseeded(tmp_path: Path) -> None:
    def handler(req: RecordedRequest) -> Response:
        if user_texts(req)[-1] == FORK_Q and not has_tool_messages(req):
            return reply("nothing yet")
        if has_tool_messages(req):
            return reply("PARENT_DONE")
        return call(("cf", "subagent_fork", {"description": "code", "prompt": FORK_Q}))

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_agent(server, store, tmp_path)
        result = await parent.run_turn("fork right away")
    assert result.ok
    (child,) = await store.children(parent.id)
    assert not child.header.is_seeded and child.inherited_event_count == 0
    loaded = await store.load(child.header.id)
    assert not any(e.type == "session/end-seed" for e in loaded.events)
    assert next(e for e in loaded.events if e.type == "subagent/descriptor").data["provider"] == "fork"
    await store.close()


async def test_depth_limit_refuses_a_great_grandchild_and_every_turn_ends(tmp_path: Path) -> None:
    def handler(req: RecordedRequest) -> Response:
        if has_tool_messages(req):
            return reply("done")
        return call(("deeper", "subagent", {"description": "deeper", "prompt": "Go deeper."}))

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        top = await make_agent(server, store, tmp_path)
        result = await top.run_turn("Go deeper.")
    assert result.ok
    sessions = await all_sessions(store)
    depths = sorted(s.header.delegation_depth for s in sessions.values())
    assert depths == [0, 1, 2]
    grandchild = next(s for s in sessions.values() if s.header.delegation_depth == 2)
    refused = next(e for e in grandchild.events if e.type == "tool/result")
    block = refused.data["message"]["content"][0]
    assert block["isError"]
    assert block["content"][0]["text"] == "Error: subagent depth 3 exceeds maxDepth 2"
    assert "error" not in refused.data, "the original's depth error carries no data.error"
    for session in sessions.values():
        assert session.events[-1].type == "turn/end"
        check_log_invariants(session.events)
    await store.close()


async def test_fork_result_ignores_the_inherited_parent_answer(tmp_path: Path) -> None:
    """Regression: with no text of its own, a fork child must not return the parent's 'OK'."""

    def handler(req: RecordedRequest) -> Response:
        texts = user_texts(req)
        if texts[-1].startswith("Remember"):
            return reply("OK")
        if texts[-1] == FORK_Q and not has_tool_messages(req):
            return stream_reply(reasoning="thinking only", text=())
        if has_tool_messages(req):
            return reply("PARENT_DONE")
        return call(("cf", "subagent_fork", {"description": "code", "prompt": FORK_Q}))

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_agent(server, store, tmp_path)
        await parent.run_turn("Remember: codeword X.")
        await parent.run_turn("fork")
    result_event = next(e for e in parent.session.events if e.type == "tool/result")
    text = result_event.data["message"]["content"][0]["content"][0]["text"]
    assert text != "OK"
    assert text == "(no output)"
    await store.close()


async def test_cancelling_the_parent_cancels_its_children(tmp_path: Path) -> None:
    import asyncio

    from dsh.testing.wire import Faults

    def handler(req: RecordedRequest) -> Response:
        if user_texts(req)[-1] == "Work slowly." and not has_tool_messages(req):
            return stream_reply(text=["par", "tial", "!"], faults=Faults(stall_after=2, stall_seconds=None))
        return call(("cs", "subagent", {"description": "slow", "prompt": "Work slowly."}))

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_agent(server, store, tmp_path)
        task = asyncio.create_task(parent.run_turn("delegate slow work"))
        await until(lambda: len(server.requests) >= 2, "the child's call is out", every=0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    sessions = await all_sessions(store)
    assert len(sessions) == 2
    for session in sessions.values():
        check_log_invariants(session.events)
        end = session.events[-1]
        assert end.type == "turn/end" and end.data["reason"]["kind"] == "aborted"
    child = next(s for s in sessions.values() if s.header.parent_session)
    assert child.events[-1].data["reason"]["reason"] == {"kind": "parent"}
    await store.close()

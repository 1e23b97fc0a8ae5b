"""Pure pieces: frame checks and encoding, and the event → session update mapping per profile."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh.acp.transport import check_message, encode_frame
from dsh.acp.updates import (
    LiveUpdates,
    history_updates,
    parse_arguments,
    tool_start,
)
from dsh.events import Event
from dsh.subagents import standard_tools
from dsh.tools import ToolRegistry


def dump(update: Any) -> dict[str, Any]:
    return update.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ([], -32600),
        ("text", -32600),
        ({}, -32600),
        ({"id": [1], "method": "x"}, -32600),
        ({"id": True, "method": "x"}, -32600),
        ({"id": 1, "method": 7}, -32600),
        ({"id": 1, "method": "x", "params": 3}, -32600),
        ({"id": 1, "method": "x", "params": {}}, None),
        ({"method": "session/cancel", "params": {}}, None),
        ({"id": "a", "result": {}}, None),
    ],
)
def test_check_message(message: Any, code: int | None) -> None:
    problem = check_message(message)
    assert (problem["error"]["code"] if problem else None) == code


def test_encode_frame_drops_null_data_and_survives_odd_values() -> None:
    frame = json.loads(
        encode_frame({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "m", "data": None}})
    )
    assert frame["error"] == {"code": -1, "message": "m"}
    kept = json.loads(
        encode_frame({"id": 2, "error": {"code": -1, "message": "m", "data": {"x": ValueError("v")}}})
    )
    assert kept["error"]["data"] == {"x": "v"}
    assert encode_frame({"a": "é"}).endswith(b"\n") and encode_frame({"a": "é"}).count(b"\n") == 1


TOOLS = standard_tools()


def start(name: str, args: dict[str, Any], tools: ToolRegistry | None = TOOLS) -> dict[str, Any]:
    return dump(tool_start("c1", name, json.dumps(args), "/w", status="pending", tools=tools))


def test_tool_titles_kinds_and_locations_come_from_the_tools() -> None:
    assert start("read", {"file_path": "a.txt"})["title"] == "Read a.txt"
    assert start("read", {})["title"] == "read"
    assert start("bash", {"command": "echo  hi\nthere"})["title"] == "Run echo hi there"
    assert start("subagent_fork", {"description": "Recall"})["title"] == "Subagent (fork): Recall"
    assert start("subagent", {})["title"] == "Subagent (spawn)"
    assert (start("mystery", {"x": 1})["title"], start("mystery", {"x": 1})["kind"]) == ("mystery", "other")
    assert len(start("bash", {"command": "x" * 500})["title"]) == 120
    kinds = {name: start(name, {})["kind"] for name in TOOLS.names()}
    assert kinds == {
        "bash": "execute", "edit": "edit", "glob": "search", "interrupt_agent": "other",
        "job_kill": "other", "job_list": "other", "job_output": "other", "list_agents": "other",
        "read": "read", "read_image": "read", "send_message": "other", "subagent": "other",
        "subagent_fork": "other", "todo_write": "think", "web_fetch": "fetch", "write": "edit",
    }  # fmt: skip
    located = start("read", {"file_path": "sub/../a.txt", "offset": 3})
    assert located["locations"] == [{"path": "/w/a.txt", "line": 3}]
    assert start("edit", {"file_path": "b.txt"})["locations"] == [{"path": "/w/b.txt"}]
    assert "locations" not in start("glob", {"pattern": "*"})
    # without the session's tools nothing is known about a call but its name
    assert start("read", {"file_path": "a.txt"}, None) | {"rawInput": None} == start("mystery", {}, None) | {
        "title": "read", "rawInput": None
    }  # fmt: skip
    assert parse_arguments("") == {} and parse_arguments("{bad") == {"arguments": "{bad"}


def ev(etype: str, data: Any, seq: int = 0) -> Event:
    surface = "append" if etype in ("user/message", "assistant/message", "tool/result") else None
    return Event(etype, seq, 0, data, surface)


def assistant(*blocks: dict[str, Any], usage: dict[str, int] | None = None) -> Event:
    data: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "message": {"role": "assistant", "content": list(blocks), "id": "m1"},
    }
    if usage:
        data["usage"] = usage
    return ev("assistant/message", data)


def result(call_id: str, text: str, *, error: bool = False) -> Event:
    block = {
        "type": "tool-result",
        "toolCallId": call_id,
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }
    message = {"source": {"kind": "tool", "callId": call_id}, "content": [block], "role": "user", "id": "r1"}
    return ev("tool/result", {"turn": 1, "step": 1, "message": message})


def test_compat_profile_is_committed_top_level_text_only() -> None:
    live = LiveUpdates("dsh-compat", "root", "/w")
    assert live.chunk("root", {"type": "text-delta", "index": 0, "text": "x"}) == []
    message = assistant(
        {"type": "reasoning", "text": "hmm"}, {"type": "text", "text": "A"}, {"type": "text", "text": ""},
        {"type": "text", "text": "B"},
    )  # fmt: skip
    assert [dump(u) for u in live.event("root", message)] == [
        {"content": {"type": "text", "text": "A"}, "sessionUpdate": "agent_message_chunk"},
        {"content": {"type": "text", "text": "B"}, "sessionUpdate": "agent_message_chunk"},
    ]
    assert live.event("child", message) == []
    call = {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"}
    assert live.event("root", ev("tool/call", call)) == []
    assert live.event("root", ev("turn/end", {"turn": 1, "reason": {"kind": "completed"}})) == []


def test_full_profile_streams_tools_and_usage() -> None:
    live = LiveUpdates("full", "root", "/w", context_window=1000, tools=TOOLS)
    [thought] = live.chunk("root", {"type": "reasoning-delta", "index": 0, "text": "t"})
    assert dump(thought)["sessionUpdate"] == "agent_thought_chunk"
    assert live.chunk("child", {"type": "text-delta", "index": 0, "text": "x"}) == []
    assert live.chunk("root", {"type": "usage", "usage": {}}) == []
    assert (
        live.event(
            "root", assistant({"type": "text", "text": "A"}, usage={"inputTokens": 7, "outputTokens": 3})
        )
        == []
    )
    call = {"turn": 1, "step": 1, "callId": "c1", "name": "write", "arguments": '{"file_path": "n.txt"}'}
    [start] = live.event("root", ev("tool/call", call))
    assert dump(start) == {
        "toolCallId": "c1", "title": "Write n.txt", "kind": "edit", "status": "in_progress",
        "locations": [{"path": "/w/n.txt"}], "rawInput": {"file_path": "n.txt"}, "sessionUpdate": "tool_call",
    }  # fmt: skip
    [done] = live.event("root", result("c1", "Error: nope", error=True))
    assert dump(done)["status"] == "failed"
    assert dump(done)["content"] == [{"type": "content", "content": {"type": "text", "text": "Error: nope"}}]
    [usage] = live.event("root", ev("turn/end", {"turn": 1, "reason": {"kind": "completed"}}))
    assert dump(usage) == {"used": 10, "size": 1000, "sessionUpdate": "usage_update"}
    assert live.event("root", ev("turn/end", {"turn": 2, "reason": {"kind": "completed"}})) == []


def test_grandchild_delegations_are_not_shown_on_the_root() -> None:
    live = LiveUpdates("full", "root", "/w")
    descriptor = {
        "mode": "one-shot",
        "provider": "spawn",
        "delegation": {"parentSession": "child", "callId": "c9"},
    }
    assert live.event("grandchild", ev("subagent/descriptor", descriptor)) == []
    descriptor["delegation"] = {"parentSession": "root", "callId": "c1"}
    [named] = live.event("child", ev("subagent/descriptor", descriptor))
    assert dump(named)["_meta"] == {"dsh/subagent": {"sessionId": "child", "kind": "spawn"}}


def test_history_per_profile() -> None:
    user = ev(
        "user/message",
        {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}, "role": "user", "id": "u1"},
    )
    call = {"type": "tool-call", "id": "c1", "name": "glob", "arguments": '{"pattern": "*.py"}'}
    events = [
        user,
        assistant({"type": "reasoning", "text": "r"}, call),
        result("c1", "a.py"),
        ev("turn/end", {}),
    ]
    compat = [dump(u)["sessionUpdate"] for u in history_updates(events, "dsh-compat", "/w")]
    assert compat == ["user_message_chunk"]
    full = [dump(u) for u in history_updates(events, "full", "/w", tools=TOOLS)]
    assert [u["sessionUpdate"] for u in full] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
    ]
    assert full[0]["messageId"] == "u1" and full[1]["messageId"] == "m1"
    assert full[2]["status"] == "pending" and full[2]["title"] == "Glob *.py"


def test_a_todo_list_is_a_plan_in_full_and_nothing_in_compat() -> None:
    todos = {
        "todos": [{"content": "read", "status": "completed"}, {"content": "fix", "status": "in_progress"}]
    }
    plan = {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "read", "priority": "medium", "status": "completed"},
            {"content": "fix", "priority": "medium", "status": "in_progress"},
        ],
    }
    [live] = LiveUpdates("full", "root", "/w").event("root", ev("todo/write", todos))
    assert dump(live) == plan
    assert LiveUpdates("dsh-compat", "root", "/w").event("root", ev("todo/write", todos)) == []
    assert [dump(u) for u in history_updates([ev("todo/write", todos)], "full", "/w")] == [plan]
    assert history_updates([ev("todo/write", todos)], "dsh-compat", "/w") == []
    assert LiveUpdates("full", "root", "/w").event("root", ev("todo/write", {"todos": "x"})) == []


def test_usage_update_carries_the_cumulative_cost_of_the_session_and_its_children() -> None:
    from decimal import Decimal

    from dsh.session.prices import Override, PriceTable

    one = Decimal(1_000_000)  # $1 a token: the cost is the token count
    live = LiveUpdates("full", "root", "/w", context_window=1000,
                       prices=PriceTable((Override("m1", None, one, one, one, one),)))  # fmt: skip
    header = {"header": {"config": {"model": "m1", "provider": "p"}}, "reason": "initial"}
    for sid in ("root", "child"):
        live.event(sid, ev("request/header", header))
    live.event("child", assistant({"type": "text", "text": "c"}, usage={"inputTokens": 5, "outputTokens": 1}))
    live.event("root", assistant({"type": "text", "text": "A"}, usage={"inputTokens": 7, "outputTokens": 3}))
    [usage] = live.event("root", ev("turn/end", {"turn": 1, "reason": {"kind": "completed"}}))
    assert dump(usage)["cost"] == {"amount": 16.0, "currency": "USD"}, "the child's calls too"
    unpriced = LiveUpdates("full", "root", "/w", context_window=1000, prices=PriceTable())
    unpriced.event(
        "root", assistant({"type": "text", "text": "A"}, usage={"inputTokens": 7, "outputTokens": 3})
    )
    [usage] = unpriced.event("root", ev("turn/end", {"turn": 1, "reason": {"kind": "completed"}}))
    assert "cost" not in dump(usage), "an unknown price is left out, never 0"

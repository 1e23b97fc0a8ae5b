"""Sample logs for the read-model tests: a parent delegating to a spawn child, a fork child."""

from __future__ import annotations

from typing import Any

from dsh.events import Event, SessionHeader

T0 = 1_700_000_000_000


def _user(text: str, kind: str = "user") -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": kind}}


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "id": "m1"}


def _result(call_id: str, text: str, *, error: bool = False) -> dict[str, Any]:
    block = {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}]}
    return {"role": "tool", "content": [{**block, "isError": error}]}


def parent_log(call_id: str = "c1") -> list[Event]:
    """Turn 1: a prompt, reasoning + a ``subagent`` call, its result, an answer; turn 2 open."""
    rows: list[tuple[str, Any, Any]] = [
        ("turn/start", {"turn": 1}, None),
        (
            "request/header",
            {"header": {"config": {"provider": "p", "model": "m-1"}}, "reason": "initial"},
            None,
        ),
        ("user/message", _user("hello there"), "append"),
        (
            "assistant/message",
            {
                "turn": 1,
                "step": 1,
                "message": _assistant(
                    {"type": "reasoning", "text": "think"},
                    {"type": "tool-call", "id": call_id, "name": "subagent", "arguments": '{"task":"x"}'},
                ),
                "usage": {"inputTokens": 10, "outputTokens": 2},
            },
            "append",
        ),
        (
            "tool/call",
            {"turn": 1, "step": 1, "callId": call_id, "name": "subagent", "arguments": '{"task":"x"}'},
            None,
        ),
        ("approval/asked", {"id": "a1", "toolName": "subagent", "callId": call_id}, None),
        ("approval/decided", {"id": "a1", "outcome": "allowed-once"}, None),
        ("tool/result", {"turn": 1, "step": 1, "message": _result(call_id, "child said hi")}, "append"),
        (
            "assistant/message",
            {
                "turn": 1,
                "step": 2,
                "message": _assistant({"type": "text", "text": "done"}),
                "usage": {"inputTokens": 5},
            },
            "append",
        ),
        ("session/title", {"title": "Greeting"}, None),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, None),
        ("turn/start", {"turn": 2}, None),
        ("user/message", _user("again"), "append"),
    ]
    return [Event(t, i, T0 + i, d, op) for i, (t, d, op) in enumerate(rows)]


def child_log(parent: str, call_id: str = "c1") -> list[Event]:
    """A spawn child's one completed turn, with its descriptor."""
    descriptor = {
        "mode": "blocking",
        "provider": "spawn",
        "label": "helper",
        "delegation": {"parentSession": parent, "callId": call_id},
    }
    rows: list[tuple[str, Any, Any]] = [
        ("turn/start", {"turn": 1}, None),
        ("subagent/descriptor", descriptor, None),
        ("user/message", _user("x"), "append"),
        (
            "assistant/message",
            {"turn": 1, "step": 1, "message": _assistant({"type": "text", "text": "hi"})},
            "append",
        ),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, None),
    ]
    return [Event(t, i, T0 + 100 + i, d, op) for i, (t, d, op) in enumerate(rows)]


def header(
    sid: str, *, parent: str | None = None, created_at: int = 1, origin: str | None = None
) -> SessionHeader:
    return SessionHeader(id=sid, created_at=created_at, cwd="/w", parent_session=parent, origin=origin)

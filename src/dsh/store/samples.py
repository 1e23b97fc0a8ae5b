"""Sample session logs for store tests: completed turns, open turns and awkward-but-valid events."""

from __future__ import annotations

from typing import Any

from dsh.events import Event


def completed_turn(seq: int, turn: int, *, reply: str = "OK", time: int = 1_700_000_000_000) -> list[Event]:
    """One completed turn starting at ``seq``: a user message, one settled model call, ``turn/end``."""
    deltas = [reply[i : i + 3] for i in range(0, len(reply), 3)] or [""]
    chunks: list[dict[str, Any]] = [{"type": "block-start", "index": 0, "blockType": "text"}]
    chunks += [{"type": "text-delta", "index": 0, "text": d} for d in deltas]
    chunks += [
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": reply}},
        {"type": "usage", "usage": {"inputTokens": 12, "outputTokens": 3}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    user = {
        "role": "user",
        "content": [{"type": "text", "text": f"question {turn}"}],
        "source": {"kind": "user"},
        "id": f"user-{turn}",
    }
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": reply}],
        "source": {"kind": "model", "provider": "scripted", "model": "m"},
        "id": f"assistant-{turn}",
    }
    stream = {"chunks": chunks, "dt": [1] * (len(chunks) - 1)}
    return [
        Event("turn/start", seq, time, {"turn": turn}),
        Event("step/start", seq + 1, time, {"turn": turn, "step": 1}),
        Event("user/message", seq + 2, time + 1, user, "append"),
        Event(
            "assistant/message",
            seq + 3,
            time + 2,
            {"turn": turn, "step": 1, "message": message, "usage": {"inputTokens": 12}, "stream": stream},
            "append",
        ),
        Event("step/end", seq + 4, time + 3, {"turn": turn, "step": 1}),
        Event("turn/end", seq + 5, time + 3, {"turn": turn, "reason": {"kind": "completed"}}),
    ]


def completed_turns(count: int, *, start_seq: int = 0, first_turn: int = 1) -> list[Event]:
    """``count`` consecutive completed turns."""
    events: list[Event] = []
    for i in range(count):
        events += completed_turn(start_seq + len(events), first_turn + i, reply=f"reply {first_turn + i}")
    return events


def open_turn(seq: int, turn: int) -> list[Event]:
    """The start of a turn that has not ended (a model call in flight)."""
    return [
        Event("turn/start", seq, 5, {"turn": turn}),
        Event("step/start", seq + 1, 5, {"turn": turn, "step": 1}),
        Event(
            "user/message",
            seq + 2,
            6,
            {
                "role": "user",
                "content": [{"type": "text", "text": "…"}],
                "source": {"kind": "user"},
                "id": "u",
            },
            "append",
        ),
    ]


def varied_events(seq: int) -> list[Event]:
    """Events that exercise the envelope: legacy chunks, citations, tool calls, unicode,
    floats, big and negative integers, an ignorable unknown type, a backwards clock."""
    return [
        Event("turn/start", seq, 10, {"turn": 9}),
        Event(
            "assistant/chunk",
            seq + 1,
            11,
            {"turn": 9, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "é✓"}},
        ),
        Event(
            "assistant/chunk",
            seq + 2,
            9,
            {"turn": 9, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "stop"}}},
        ),
        Event(
            "tool/call",
            seq + 3,
            -4,
            {"turn": 9, "step": 1, "callId": "c1", "name": "bash", "arguments": '{"a": 1}'},
        ),
        Event(
            "tool/result",
            seq + 4,
            2**62,
            {
                "turn": 9,
                "step": 1,
                "message": {
                    "role": "user",
                    "content": [{"type": "tool-result", "toolCallId": "c1", "content": [], "isError": False}],
                },
                "meta": {
                    "f": 0.1,
                    "neg": -0.0,
                    "big": -(2**63),
                    "nested": [[], {}, None, True, "\u0000\ud7ff"],
                },
            },
            "append",
            (seq + 3,),
        ),
        Event("agent/inbox/spliced", seq + 5, 12, {"target": "next-turn", "start": 0, "inserted": []}),
        Event("future/thing", seq + 6, 13, {"x": 1}, ignorable=True),
        Event("assistant/message", seq + 7, 14, {"turn": 9, "message": {"content": []}}, "append", ()),
        Event("session/end-seed", seq + 8, 15, {}),
        Event("turn/end", seq + 9, 16, {"turn": 9, "reason": {"kind": "completed"}}),
    ]

"""Read-only views over a log: final assistant text, usage totals, crash closers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dsh.events import Event
from dsh.events.compaction import bracket_of, end_data
from dsh.events.messages import joined_text, text_block, tool_result_message
from dsh.events.payloads import ToolResultData, tool_result_data, turn_end, usage_of
from dsh.events.vocabulary import (
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    COMPACTION_END,
    COMPACTION_START,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
)
from dsh.session.log import Session
from dsh.session.timeline.state import open_turn
from dsh.session.usage import add_usage


def final_assistant_text(events: Sequence[Event]) -> str:
    """Text of the last assistant message with non-empty text in ``events`` ("" if none).

    Callers pass a session's own events (``events[inherited_event_count:]``), so a fork
    child's inherited answers are never mistaken for its own.
    """
    for event in reversed(events):
        if event.type == ASSISTANT_MESSAGE:
            text = joined_text(event.data.get("message", {}).get("content", []))
            if text.strip():
                return text
    return ""


def all_assistant_text(events: Sequence[Event]) -> str:
    """All assistant text in ``events``, joined with blank lines (partial output)."""
    parts = []
    for event in events:
        if event.type == ASSISTANT_MESSAGE:
            text = joined_text(event.data.get("message", {}).get("content", []))
            if text.strip():
                parts.append(text)
    return "\n\n".join(parts)


def usage_totals(events: Sequence[Event]) -> dict[str, int]:
    """Sum of the usage of every settlement in ``events``."""
    totals: dict[str, int] = {}
    for event in events:
        if event.type in (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT):
            add_usage(totals, usage_of(event))
    return totals


OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
"""The code of the result a started call gets when its runner was lost (crash repair)."""


def outcome_unknown(
    turn: int, step: int, call_id: str, lost: str, *, message_id: str | None = None
) -> ToolResultData:
    """The ``tool/result`` of a call logged as started whose runner was ``lost`` (``"the session
    was interrupted"``, ``"the worker running it was lost"``): an error, ``OUTCOME_UNKNOWN``."""
    text = f"Error: the tool's outcome is unknown ({lost})"
    message = tool_result_message(call_id, [text_block(text)], is_error=True, message_id=message_id)
    return tool_result_data(turn, step, message, error_code=OUTCOME_UNKNOWN)


Closer = tuple[str, dict[str, Any], tuple[int, ...] | None]
"""``(type, data, sourceEventSeqs)`` of one event to append."""


def _open_compaction(events: Sequence[Event]) -> tuple[str, int | None] | None:
    """``(id, owner turn)`` of a ``compaction/start`` with no ``compaction/end`` after it."""
    for event in reversed(events):
        if event.type != COMPACTION_START and event.type != COMPACTION_END:
            continue
        bracket = bracket_of(event)
        if bracket is None:
            continue
        if event.type == COMPACTION_END:
            return None
        turn = bracket.get("turn")
        return str(bracket.get("compactionId", "")), turn if type(turn) is int else None
    return None


@dataclass(frozen=True, slots=True)
class CallPairs:
    """The tool calls of a stretch of log paired with their results: ``started``, each call's
    ``tool/call`` event by call id; ``settled``, the ids a ``tool/result`` answers."""

    started: dict[str, Event]
    settled: frozenset[str]

    def open(self) -> dict[str, Event]:
        """The calls logged as started without a result (their runner was lost), in log order."""
        return {cid: event for cid, event in self.started.items() if cid not in self.settled}


def call_pairs(events: Sequence[Event]) -> CallPairs:
    """The one pairing of ``tool/call`` and ``tool/result`` events (crash repair, and a
    stepwise driver's check that a call already ran: ``dsh.loop.stepwise``)."""
    started: dict[str, Event] = {}
    settled: set[str] = set()
    for event in events:
        if event.type == TOOL_CALL and isinstance(event.data, dict):
            started[str(event.data.get("callId", ""))] = event
        elif event.type == TOOL_RESULT and isinstance(event.data, dict):
            for block in event.data.get("message", {}).get("content", []):
                if isinstance(block, dict) and block.get("type", "tool-result") == "tool-result":
                    settled.add(str(block.get("toolCallId", "")))
    return CallPairs(started, frozenset(settled))


def interrupted_turn_closers(session: Session) -> list[Closer]:
    """The events that close a turn a crash left open, in append order.

    First ``compaction/end {error: "interrupted"}`` for a compaction it left open (its lock
    released; the history unchanged), then one error ``tool/result`` per logged
    ``tool/call`` without a result (``TOOL_OUTCOME_UNKNOWN``), ``step/end`` if a step is
    open, then ``turn/end {kind: "interrupted"}``. Empty when nothing is open.
    """
    out: list[Closer] = []
    compaction = _open_compaction(session.of_type(COMPACTION_START, COMPACTION_END))
    if compaction is not None:
        out.append((COMPACTION_END, dict(end_data(compaction[0], compaction[1], "interrupted")), None))
    events = session.events
    turn = open_turn(events)
    if turn is None:
        return out
    start = session.of_type(TURN_START)[-1].seq
    step_open: dict[str, Any] | None = None
    for event in events[start:]:
        if event.type == STEP_START:
            step_open = {"turn": event.data["turn"], "step": event.data["step"]}
        elif event.type == STEP_END:
            step_open = None
    for call_id, call in call_pairs(events[start:]).open().items():
        message_id = f"interrupted-tool-result-{call_id}-{call.seq}"
        data = outcome_unknown(
            call.data["turn"],
            call.data["step"],
            call_id,
            "the session was interrupted",
            message_id=message_id,
        )
        out.append((TOOL_RESULT, dict(data), (call.seq,)))
    if step_open is not None:
        out.append((STEP_END, step_open, None))
    out.append((TURN_END, dict(turn_end(turn, {"kind": "interrupted"})), None))
    return out

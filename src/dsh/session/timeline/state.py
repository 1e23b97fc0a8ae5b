"""What a timeline knows of one session so far: its open turn, usage, status and digest fields.

The one home of the "is a turn open" rule — the turn started after the last ``turn/end`` —
and of a session's status (see :meth:`SessionState.status`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from dsh.events import Event
from dsh.events.compaction import CompactionSummaryData
from dsh.events.descriptor import SubagentDescriptor
from dsh.events.messages import Message
from dsh.events.vocabulary import TURN_END, TURN_START
from dsh.session.timeline.items import Approval, ToolCall
from dsh.session.usage import Ledger, Route

RUNNING_WINDOW_MS = 5 * 60 * 1000
"""An open turn whose last event is younger than this is ``running``; older is ``interrupted``."""

Status = Literal["running", "completed", "interrupted", "error", "empty"]
END_STATUS: dict[str, Status] = {
    "completed": "completed",
    "max-tokens": "completed",
    "blocked": "completed",
    "error": "error",
    "aborted": "interrupted",
    "interrupted": "interrupted",
}


@dataclass(slots=True)
class SurfaceNode:
    """A node of the model-visible history: the turns it covers (a checkpoint: the span it
    replaced; ``None``: logged before its turn opened, settled at the next ``turn/start``)
    and its message (a checkpoint: its summary, unframed; ``None``: it shows nothing)."""

    turns: tuple[int, int] | None
    message: Message | None


@dataclass(slots=True)
class Opened:
    """A compaction between its ``compaction/start`` and its checkpoint or ``compaction/end``."""

    turn: int | None
    summary: CompactionSummaryData | None = None


@dataclass(slots=True)
class SessionState:
    """One session's fold state (``cut``: its inherited event count)."""

    cut: int = 0
    open_turn: int | None = None
    """The turn started after the last ``turn/end`` (``None``: no turn is open)."""
    last_reason: str | None = None
    """How the last ``turn/end`` said its turn ended."""
    title: str | None = None
    first_prompt: str | None = None
    """The first prompt among the session's own events."""
    first_any_prompt: str | None = None
    model: str | None = None
    last_time: int | None = None
    descriptor: SubagentDescriptor | None = None
    usage: dict[str, int] = field(default_factory=dict)
    """Every settlement's usage (own events only)."""
    ledger: Ledger = field(default_factory=Ledger)
    """Every own model call's usage by route (settlements and streamed compaction summaries)."""
    route: Route = (None, None)
    """The model and provider of the ``request/header`` in force."""
    turn_usage: dict[str, int] = field(default_factory=dict)
    """The usage of the settlements since the last ``turn/end``."""
    calls: dict[str, ToolCall] = field(default_factory=dict)
    """Every call seen, by call id (a result is paired with it)."""
    pending: set[str] = field(default_factory=set)
    """Calls of the open turn without a result yet."""
    asked: dict[str, Approval] = field(default_factory=dict)
    events: int = 0
    compactions: int = 0
    """Own compactions that replaced a span (a fork child's inherited ones are not counted)."""
    failed_compactions: int = 0
    """Own compaction attempts that ended with an error (the history unchanged)."""
    surface: dict[int, SurfaceNode] = field(default_factory=dict)
    """The model-visible history so far, by seq (a compaction takes its span off)."""
    unturned: list[int] = field(default_factory=list)
    """Surface nodes logged while no turn was open (the original logs a prompt before its turn)."""
    compacting: dict[str, Opened] = field(default_factory=dict)
    """Compactions started and not yet ended, by compaction id."""
    branch_turn: int | None = None
    """The turn a fork child branched after: the one its last inherited event ends."""

    def status(self, now_ms: int | None = None) -> Status:
        """``running`` if a turn is open and the last event is younger than five minutes, else
        ``interrupted``; otherwise by the last ``turn/end`` (``empty``: no turn ended)."""
        if self.open_turn is not None:
            now = now_ms if now_ms is not None else int(time.time() * 1000)
            last = self.last_time
            return "running" if last is not None and now - last < RUNNING_WINDOW_MS else "interrupted"
        if self.last_reason is not None:
            return END_STATUS.get(self.last_reason, "completed")
        return "empty"

    @property
    def prompt(self) -> str:
        """The first own prompt, else the first inherited one, else ``""``."""
        return self.first_prompt if self.first_prompt is not None else (self.first_any_prompt or "")


def opened_turn(event: Event) -> int:
    """The turn a ``turn/start`` opens: its ``turn`` number (0 when it has none)."""
    turn = event.data.get("turn") if isinstance(event.data, dict) else None
    return turn if type(turn) is int else 0


def next_open_turn(current: int | None, event: Event) -> int | None:
    """The open turn after ``event``: a ``turn/start`` opens its turn (:func:`opened_turn`),
    a ``turn/end`` closes it, any other event leaves ``current`` — the one rule, applied by
    the fold and by the scenario runner's light progress listener."""
    if event.type == TURN_START:
        return opened_turn(event)
    if event.type == TURN_END:
        return None
    return current


def open_turn(events: Sequence[Event]) -> int | None:
    """The turn started after the last ``turn/end`` of ``events`` (``None``: none is open) —
    the rule the fold applies event by event (:func:`next_open_turn`), read from the log's end."""
    for event in reversed(events):
        if event.type in (TURN_START, TURN_END):
            return next_open_turn(None, event)
    return None

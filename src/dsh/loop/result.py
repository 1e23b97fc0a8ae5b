"""How a turn ended: :class:`TurnResult` and the clean ``turn/end`` reasons."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh.events import Event
from dsh.events.chunks import Failure
from dsh.events.payloads import TurnEndReason, turn_end_of
from dsh.events.vocabulary import TURN_END, TURN_START
from dsh.session import final_assistant_text, usage_totals

CLEAN_ENDS = frozenset({"completed", "max-tokens", "blocked"})
"""The ``turn/end`` reasons of a turn that ended as a turn may (the rest: error, aborted)."""


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended, its final assistant text and its usage."""

    session_id: str
    turn: int
    reason: TurnEndReason
    text: str
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The turn ended as a turn may: ``completed``, ``max-tokens``, or ``blocked`` (a
        ``UserPromptSubmit`` hook refused the prompt; the original answers ``end_turn``)."""
        return self.reason.get("kind") in CLEAN_ENDS

    @property
    def failure(self) -> Failure | None:
        return self.reason.get("failure")


def closed_turns(session_id: str, own_events: Sequence[Event], *, after: int) -> list[TurnResult]:
    """Every turn of ``own_events`` the log closed after turn ``after``, in order: how it
    ended, its final assistant text and its own usage (what a woken turn's caller never got)."""
    out: list[TurnResult] = []
    first = len(own_events)  # read back from the end to the last turn closed by ``after``
    while first > 0:
        end = turn_end_of(own_events[first - 1]) if own_events[first - 1].type == TURN_END else None
        if end is not None and end["turn"] <= after:
            break
        first -= 1
    start = first
    for i in range(first, len(own_events)):
        event = own_events[i]
        if event.type == TURN_START:
            start = i
        end = turn_end_of(event)
        if end is not None and end["turn"] > after:
            own = own_events[start : i + 1]
            reason: TurnEndReason = end.get("reason") or {"kind": "error"}
            out.append(
                TurnResult(session_id, end["turn"], reason, final_assistant_text(own), usage_totals(own))
            )
    return out

"""How a turn ended: :class:`TurnResult` and the clean ``turn/end`` reasons."""

from __future__ import annotations

from dataclasses import dataclass, field

from dsh.events.chunks import Failure
from dsh.events.payloads import TurnEndReason

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

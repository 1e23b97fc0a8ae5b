"""Cross-session order: the seam a replay uses to make sessions exchange messages as recorded.

A live run lets background children and their parent interleave freely. A replay must not:
a settlement notice that reached the recorded parent after its turn ended must reach the
live parent after that turn too, whatever the scheduler did. A model that knows the
recorded order (``dsh.replay.ReplayModel``) implements :class:`DeliveryOrder`; the loop and
the subagent tools await it when the model they run with has it, and do nothing otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from dsh.events import Event
from dsh.events.messages import Message


@dataclass(frozen=True, slots=True, order=True)
class SessionProgress:
    """How far a session is: steps started and turns ended (its own, after any inherited cut)."""

    steps: int
    turns_ended: int

    def reached(self, other: SessionProgress) -> bool:
        return self.steps >= other.steps and self.turns_ended >= other.turns_ended


@runtime_checkable
class DeliveryOrder(Protocol):
    """Holds deliveries and claims until the live sessions reach the recorded order."""

    async def before_delivery(
        self,
        sender: str,
        recipient: str,
        received: Callable[[], Sequence[str]],
        progress: Callable[[], SessionProgress],
    ) -> None:
        """Return once ``recipient`` (live id) is as far as the recording was when ``sender``'s
        next message reached it: every message the recording received before it has arrived
        (``received``: the live senders so far, in order) and ``progress`` has caught up."""

    async def before_claim(
        self, session: str, available: Callable[[], Sequence[Message]], *, ending: int | None = None
    ) -> None:
        """Return once every message ``session``'s next recorded call saw from another
        session is among ``available`` (its history plus what its inbox holds).

        ``ending``: the turn that would end now for want of work; wait only if the
        recording went on with another step of that turn."""

    def progressed(self, session: str, event: Event | None = None) -> None:
        """``session`` appended ``event``: waits that depend on it look again."""

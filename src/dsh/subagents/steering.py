"""The reach of the steering tools: how a caller finds, wakes, stops and reports to other sessions.

The four steering tools (:mod:`dsh.subagents.control`) own the rules — only the direct
parent messages a child, any ancestor interrupts one, ``list_agents`` walks the tree and
says how deep each child sits — and every text the model sees. What differs between the
drivers is only how another session is reached, behind :class:`SteeringReach`: in-process
agents (:class:`dsh.subagents.live.LiveReach`) or workflows
(``dsh.temporal.steering.TemporalReach``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from dsh.events.messages import Message
from dsh.subagents.lifecycle import StoredChild
from dsh.tools import ToolContext

AgentStatus = Literal["running", "idle", "ready"]
"""``list_agents``' words: ``running`` (working now), ``idle`` (live, between the turns of an
activation), ``ready`` (nothing running: a message wakes or resumes it)."""


@dataclass(frozen=True, slots=True)
class Reached:
    """A continuable child as a reach finds it: its stored self and how it runs now."""

    child: StoredChild
    status: AgentStatus


class SteeringReach(Protocol):
    """How the steering tools reach other sessions (one per tool set; the caller is ``ctx``'s)."""

    async def children(self, ctx: ToolContext, parent_id: str) -> list[Reached]:
        """The continuable children stored under ``parent_id``, in creation order (none when
        the caller cannot steer from here)."""
        ...

    async def message(self, ctx: ToolContext, child: StoredChild, message: Message) -> bool:
        """Queue ``message`` as the next turn of ``child`` (the caller's own), waking it;
        ``False``: it cannot be reached (held by another process, unreadable)."""
        ...

    async def interrupt(self, ctx: ToolContext, agent: StoredChild) -> bool:
        """Stop the current turn of ``agent`` (a descendant of the caller), keeping its inbox;
        one that is not running is left alone. ``False``: it cannot be reached from here."""
        ...

    async def report(self, ctx: ToolContext, message: Message) -> bool:
        """Deliver ``message`` to the caller's direct parent at its next step (waking it when
        idle); ``False``: the caller has no parent that can be reached."""
        ...

"""Continuable children: the live ones of this process, their settlement, and delivery to parents.

A background ``subagent`` call registers its child here and queues the task as the child's
``next-turn`` message; the child's own driver (``Agent.wake``) runs turns while its inbox
holds work — one *activation*. When the inbox is empty the activation settles: the parent
gets one notice (:func:`dsh.subagents.texts.settlement_notice`), at its next step when it
is running a turn, else as its next turn, waking it. Work that arrives before the notice
is sent keeps the same activation going.

Deliveries first await the model's :class:`~dsh.model.DeliveryOrder` when it has one (a
replay), so a replayed child reaches its parent exactly where the recording says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from dsh.events import Event
from dsh.events.messages import Block, Message
from dsh.events.payloads import assistant_blocks_of
from dsh.loop import Agent, TurnResult
from dsh.loop.inbox import senders
from dsh.loop.state import IdleState
from dsh.model import DeliveryOrder
from dsh.subagents import texts
from dsh.subagents.steering import AgentStatus
from dsh.tools.base import AgentHandle


def closing_blocks(events: Sequence[Event]) -> list[Block]:
    """The text blocks of the last assistant message in ``events`` that has text."""
    for event in reversed(events):
        content = assistant_blocks_of(event)
        if content is not None:
            blocks = [b for b in content if b.get("type") == "text"]
            if any(str(b.get("text", "")).strip() for b in blocks):
                return blocks
    return []


async def in_recorded_order(sender: Agent, recipient: Agent) -> None:
    """Wait, under a replay, until ``recipient`` is where the recording received ``sender``'s
    next message (nothing to wait for in a live run)."""
    model = sender.model
    if isinstance(model, DeliveryOrder):
        session = recipient.session
        await model.before_delivery(
            sender.id, recipient.id, lambda: senders(session.own_events), recipient.progress
        )


def continuable(handle: AgentHandle) -> Agent | None:
    """The agent behind ``handle`` when it can host continuable children (``None``: a handle
    of another implementation). A waited-for child needs only the handle; a background one
    joins :class:`Children`, whose settlement, delivery and resumption use the whole agent
    (its inbox, activation, store and the replay's delivery order)."""
    return handle if isinstance(handle, Agent) else None


def deliver_to_parent(parent: Agent, message: Message) -> None:
    """A parent in a turn sees ``message`` at its next step; otherwise (idle, or its turn's end
    already logged) as its next turn, woken: where it lands never depends on how fast the
    ending turn finishes."""
    if parent.turn_open:
        parent.deliver(message, "next-step")
    else:
        parent.deliver(message, "next-turn", wake=True)


@dataclass(slots=True)
class Child:
    """A live continuable child: its agent, who started it, and its label."""

    agent: Agent
    parent: Agent
    label: str
    depth: int
    settled: bool = False
    """Its last activation ended with a notice to the parent (reset by new work)."""

    @property
    def status(self) -> AgentStatus:
        """The original's words: ``running`` while it has work, ``ready`` once its activation
        settled (nothing to do until ``send_message``), else ``idle`` (live, between turns of
        an activation that has not settled yet)."""
        if self.agent.busy:
            return "running"
        return "ready" if self.settled else "idle"


class Children:
    """The live continuable children of one tool set (shared by a parent and its descendants)."""

    def __init__(self) -> None:
        self._live: dict[str, Child] = {}

    def get(self, child_id: str) -> Child | None:
        return self._live.get(child_id)

    def adopt(self, child: Child) -> None:
        """Register ``child`` and settle each of its activations with a notice to its parent."""
        self._live[child.agent.id] = child
        child.agent.activation = _Settlement(child)

    def start(self, child: Child, task: Message) -> None:
        """Register ``child`` and start its first activation with ``task``."""
        self.adopt(child)
        child.agent.deliver(task, "next-turn", wake=True)

    def running(self) -> list[Child]:
        """The live children with work now (a turn running or due)."""
        return [c for c in self._live.values() if c.agent.busy]

    async def settle(self, within: float) -> bool:
        """Wait up to ``within`` s until no live child and no woken parent turn is running
        (``False`` if some still are)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while any(c.agent.busy or c.parent.busy for c in self._live.values()):
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def aclose(self) -> None:
        """Stop every live child (their running turns end ``aborted {disposed}``) and forget them."""
        children, self._live = list(self._live.values()), {}
        for child in reversed(children):  # children before their parents
            child.agent.activation = None
            await child.agent.aclose()


class _Settlement:
    """A child's activation end: the recorded order (under replay), then the notice."""

    __slots__ = ("child",)

    def __init__(self, child: Child) -> None:
        self.child = child

    async def before_idle(self, agent: IdleState) -> None:
        await in_recorded_order(self.child.agent, self.child.parent)

    def on_idle(self, agent: IdleState, last: TurnResult) -> None:
        parent = self.child.parent
        self.child.settled = True
        if parent.closed:
            return
        kind = str(last.reason.get("kind", "error"))
        notice = texts.settlement_notice(agent.id, kind, closing_blocks(agent.session.own_events))
        deliver_to_parent(parent, notice)

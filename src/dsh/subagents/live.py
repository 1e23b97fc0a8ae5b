"""The in-process reach of the steering tools: the live agents of one tool set's :class:`Children`.

A child not live in this process but stored under the caller is resumed from its log for a
message (its lease is taken; one held by another process makes it unavailable); only a live
agent can be interrupted, and ``report`` reaches a live, open parent.
"""

from __future__ import annotations

from dsh.errors import DshError
from dsh.events.messages import Message
from dsh.loop import Agent
from dsh.subagents.children import Child, Children, in_recorded_order
from dsh.subagents.control import ReportTool
from dsh.subagents.lifecycle import StoredChild, stored_children
from dsh.subagents.steering import Reached
from dsh.tools import ToolContext
from dsh.tools.registry import ToolRegistry


def _caller(ctx: ToolContext) -> Agent | None:
    agent = ctx.agent
    return agent if isinstance(agent, Agent) else None


class LiveReach:
    """:class:`~dsh.subagents.steering.SteeringReach` over the live children of one tool set."""

    def __init__(self, children: Children) -> None:
        self.live = children

    async def children(self, ctx: ToolContext, parent_id: str) -> list[Reached]:
        caller = _caller(ctx)
        if caller is None:
            return []
        out: list[Reached] = []
        for stored in await stored_children(caller.store, parent_id):
            live = self.live.get(stored.id)
            out.append(Reached(stored, live.status if live is not None else "ready"))
        return out

    async def message(self, ctx: ToolContext, child: StoredChild, message: Message) -> bool:
        caller = _caller(ctx)
        live = self.live.get(child.id)
        if caller is not None and live is None:
            live = await self._resume(caller, child)
        if live is None:
            return False
        live.settled = False  # a new activation
        live.agent.deliver(message, "next-turn", wake=True)
        return True

    async def _resume(self, caller: Agent, found: StoredChild) -> Child | None:
        """A stored child of ``caller`` not live here, resumed under its lease (else ``None``)."""
        try:
            agent = await Agent.resume(
                caller.store,
                found.id,
                model=caller.model,
                tools=caller.tools  # a fork child keeps its parent's tools: its prefix (issue 43)
                if "report" in caller.tools or found.kind == "fork"
                else with_report(caller, self.live),
                config=caller.config,
                feed=caller.feed,
                delegation=found.delegation,
                extras=caller.extras,
            )
        except DshError:
            return None  # running in another process (its lease is held) or unreadable
        child = Child(agent, caller, found.label, found.depth)
        self.live.adopt(child)
        return child

    async def interrupt(self, ctx: ToolContext, agent: StoredChild) -> bool:
        live = self.live.get(agent.id)
        if live is None:
            return False
        live.agent.interrupt()
        return True

    async def report(self, ctx: ToolContext, message: Message) -> bool:
        child = self.live.get(ctx.session_id)
        if child is None or child.parent.closed:
            return False
        await in_recorded_order(child.agent, child.parent)
        child.parent.deliver(message, "next-step", wake=True)
        return True


def with_report(parent: Agent, children: Children) -> ToolRegistry:
    """``parent``'s tools plus ``report``: what a continuable child of it may call."""
    tools = parent.tools
    found = [tool for name in tools.names() if (tool := tools.get(name)) is not None]
    return ToolRegistry([*found, ReportTool(LiveReach(children))], spill=tools.spill)

"""The tools that steer background children: ``send_message``, ``list_agents``,
``interrupt_agent`` (a parent's) and ``report`` (a continuable child's).

Names, arguments and result texts are the original's; the descriptions are our own.
Only the direct parent may message a child; any ancestor may interrupt one. A child that is
not live in this process but stored under the caller is resumed from its log for the
message (its lease is taken; one held by another process makes it unavailable).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dsh.errors import DshError
from dsh.loop import Agent
from dsh.subagents import delegate, texts
from dsh.subagents.children import Child, Children, in_recorded_order
from dsh.subagents.lifecycle import stored_children
from dsh.tools import Tool, ToolArgs, ToolContext, ToolOutput
from dsh.tools.base import A
from dsh.tools.registry import ToolRegistry


def _caller(ctx: ToolContext) -> Agent | None:
    agent = ctx.agent
    return agent if isinstance(agent, Agent) else None


class SendArgs(ToolArgs):
    subagent_id: str = Field(description="The id `subagent` returned for the background child.")
    message: str = Field(description="What the child should do next (it becomes the child's next turn).")


class ListArgs(ToolArgs):
    scope: Literal["children", "descendants"] | None = Field(
        default=None,
        description="children (the default): the children you started; descendants: the whole "
        "tree below you.",
    )


class InterruptArgs(ToolArgs):
    agent_id: str = Field(description="The id of a running child (or deeper descendant) to stop.")


class ReportArgs(ToolArgs):
    output: str = Field(description="The finding or result for the agent that started you, self-contained.")


class _ControlTool(Tool[A]):
    """A tool over the background children of one tool set."""

    def __init__(self, children: Children) -> None:
        self.children = children


class SendMessageTool(_ControlTool[SendArgs]):
    """``send_message {subagent_id, message}``: queue the message as the child's next turn."""

    name = "send_message"
    description = (
        "Give a background child started with `subagent` more work: the message becomes its "
        "next turn in the same conversation (after the turn it is on, if any). Returns only a "
        "confirmation; the child's outcome arrives later as a notice."
    )
    args_model = SendArgs

    async def call(self, args: SendArgs, ctx: ToolContext) -> ToolOutput:
        caller = _caller(ctx)
        child = self.children.get(args.subagent_id)
        if caller is not None and child is None:
            child = await self._resume(caller, args.subagent_id)
        if caller is None or child is None or child.parent.id != caller.id:
            return ToolOutput.error(texts.unavailable(args.subagent_id), "NOT_RESUMABLE")
        child.settled = False  # a new activation
        child.agent.deliver(texts.coordinator_relay(caller.id, args.message), "next-turn", wake=True)
        return ToolOutput.text(texts.queued(args.subagent_id))

    async def _resume(self, caller: Agent, child_id: str) -> Child | None:
        """A stored child of ``caller`` not live here, resumed under its lease (else ``None``)."""
        stored = {s.id: s for s in await stored_children(caller.store, caller.id)}
        found = stored.get(child_id)
        if found is None:
            return None
        try:
            agent = await Agent.resume(
                caller.store,
                child_id,
                model=caller.model,
                tools=caller.tools if "report" in caller.tools else with_report(caller, self.children),
                config=caller.config,
                feed=caller.feed,
                delegation=found.delegation,
                extras=caller.extras,
            )
        except DshError:
            return None  # running in another process (its lease is held) or unreadable
        child = Child(
            agent, caller, found.label, delegate.child_depth(caller.session.header.delegation_depth)
        )
        self.children.adopt(child)
        return child


class ListAgentsTool(_ControlTool[ListArgs]):
    """``list_agents {scope?}``: the caller's continuable children and their status."""

    name = "list_agents"
    description = (
        "List the background children you started (by id and label) with their status: running "
        "(working now), idle (live, between turns) or ready (only in storage; `send_message` "
        "resumes it). You are told when a child finishes, so do not poll with this."
    )
    args_model = ListArgs

    async def call(self, args: ListArgs, ctx: ToolContext) -> ToolOutput:
        caller = _caller(ctx)
        if caller is None:
            return ToolOutput.text(texts.NO_SUBAGENTS)
        deep = args.scope == "descendants"
        lines: list[str] = []
        base = caller.session.header.delegation_depth
        frontier = [caller.id]
        while frontier:
            below: list[str] = []
            for parent_id in frontier:
                for entry in await stored_children(caller.store, parent_id):
                    live = self.children.get(entry.id)
                    status = live.status if live is not None else "ready"
                    depth = delegate.depth_below(entry.depth, base)
                    lines.append(
                        texts.agent_line(
                            entry.id, status, entry.label, parent=parent_id if deep else None, depth=depth
                        )
                    )
                    below.append(entry.id)
            frontier = below if deep else []
        return ToolOutput.text("\n".join(lines) if lines else texts.NO_SUBAGENTS)


class InterruptAgentTool(_ControlTool[InterruptArgs]):
    """``interrupt_agent {agent_id}``: stop a descendant's current turn; its inbox is kept."""

    name = "interrupt_agent"
    description = (
        "Stop the current turn of a background child (or of any agent below you). Messages "
        "queued for it stay queued and it remains available for `send_message`; stopping one "
        "that is already idle does nothing."
    )
    args_model = InterruptArgs

    async def call(self, args: InterruptArgs, ctx: ToolContext) -> ToolOutput:
        caller = _caller(ctx)
        below = {c.agent.id: c for c in self.children.descendants(caller.id)} if caller else {}
        child = below.get(args.agent_id)
        if child is None:
            return ToolOutput.error(texts.unavailable(args.agent_id), "NOT_RESUMABLE")
        child.agent.interrupt()
        return ToolOutput.text(texts.interrupt_requested(args.agent_id))


class ReportTool(_ControlTool[ReportArgs]):
    """``report {output}``: a continuable child's message to its parent (at the parent's next step)."""

    name = "report"
    description = (
        "Send a result or finding to the agent that started you; it does not see your work "
        "otherwise. Reporting does not end your turn. Call it once with your final result, "
        "and earlier for findings that change what that agent should do."
    )
    args_model = ReportArgs

    async def call(self, args: ReportArgs, ctx: ToolContext) -> ToolOutput:
        child = self.children.get(ctx.session_id)
        if child is None or child.parent.closed:
            return ToolOutput.error(texts.PARENT_NOT_LIVE, "PARENT_UNAVAILABLE")
        await in_recorded_order(child.agent, child.parent)
        relay = texts.report_relay(child.agent.id, args.output)
        child.parent.deliver(relay, "next-step", wake=True)
        return ToolOutput.text(texts.report_accepted(relay["id"]))


def with_report(parent: Agent, children: Children) -> ToolRegistry:
    """``parent``'s tools plus ``report``: what a continuable child of it may call."""
    tools = parent.tools
    found = [tool for name in tools.names() if (tool := tools.get(name)) is not None]
    return ToolRegistry([*found, ReportTool(children)], spill=tools.spill)

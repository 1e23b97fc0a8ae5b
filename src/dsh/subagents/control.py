"""The tools that steer background children: ``send_message``, ``list_agents``,
``interrupt_agent`` (a parent's) and ``report`` (a continuable child's) — for both drivers.

Names, arguments and result texts are the original's; the descriptions are our own.
The rules live here: only the direct parent may message a child, any ancestor may
interrupt one, ``list_agents`` walks the stored tree below the caller and says how deep
each child sits (:mod:`dsh.subagents.delegate`). How another session is reached — an
in-process agent or a workflow — is the :class:`~dsh.subagents.steering.SteeringReach`
each tool is built over.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dsh.subagents import delegate, texts
from dsh.subagents.lifecycle import StoredChild
from dsh.subagents.steering import Reached, SteeringReach
from dsh.tools import Tool, ToolArgs, ToolContext, ToolOutput
from dsh.tools.base import A


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


class SteeringTool(Tool[A]):
    """A tool over the sessions its :class:`SteeringReach` reaches."""

    def __init__(self, reach: SteeringReach) -> None:
        self.reach = reach

    async def below(self, ctx: ToolContext, *, deep: bool) -> list[tuple[str, Reached]]:
        """The caller's stored children as (their parent, it) — with ``deep`` every
        descendant, parents before their children."""
        out: list[tuple[str, Reached]] = []
        frontier = [ctx.session_id]
        while frontier:
            found = [(p, r) for p in frontier for r in await self.reach.children(ctx, p)]
            out.extend(found)
            frontier = [r.child.id for _, r in found] if deep else []
        return out

    async def find(self, ctx: ToolContext, session_id: str, *, deep: bool) -> StoredChild | None:
        """The caller's child (``deep``: descendant) ``session_id``, else ``None``."""
        found = [r.child for _, r in await self.below(ctx, deep=deep) if r.child.id == session_id]
        return found[0] if found else None


class SendMessageTool(SteeringTool[SendArgs]):
    """``send_message {subagent_id, message}``: queue the message as the child's next turn."""

    name = "send_message"
    description = (
        "Give a background child started with `subagent` more work: the message becomes its "
        "next turn in the same conversation (after the turn it is on, if any). Returns only a "
        "confirmation; the child's outcome arrives later as a notice."
    )
    args_model = SendArgs

    async def call(self, args: SendArgs, ctx: ToolContext) -> ToolOutput:
        child = await self.find(ctx, args.subagent_id, deep=False)  # the direct parent only
        relay = texts.coordinator_relay(ctx.session_id, args.message)
        if child is None or not await self.reach.message(ctx, child, relay):
            return ToolOutput.error(texts.unavailable(args.subagent_id), "NOT_RESUMABLE")
        return ToolOutput.text(texts.queued(args.subagent_id))


class ListAgentsTool(SteeringTool[ListArgs]):
    """``list_agents {scope?}``: the caller's continuable children and their status."""

    name = "list_agents"
    description = (
        "List the background children you started (by id and label) with their status: running "
        "(working now), idle (live, between turns) or ready (only in storage; `send_message` "
        "resumes it). You are told when a child finishes, so do not poll with this."
    )
    args_model = ListArgs

    async def call(self, args: ListArgs, ctx: ToolContext) -> ToolOutput:
        if ctx.agent is None:
            return ToolOutput.text(texts.NO_SUBAGENTS)
        deep = args.scope == "descendants"
        base = ctx.agent.header.delegation_depth
        lines = [
            texts.agent_line(
                r.child.id,
                r.status,
                r.child.label,
                parent=parent if deep else None,
                depth=delegate.depth_below(r.child.depth, base),
            )
            for parent, r in await self.below(ctx, deep=deep)
        ]
        return ToolOutput.text("\n".join(lines) if lines else texts.NO_SUBAGENTS)


class InterruptAgentTool(SteeringTool[InterruptArgs]):
    """``interrupt_agent {agent_id}``: stop a descendant's current turn; its inbox is kept."""

    name = "interrupt_agent"
    description = (
        "Stop the current turn of a background child (or of any agent below you). Messages "
        "queued for it stay queued and it remains available for `send_message`; stopping one "
        "that is already idle does nothing."
    )
    args_model = InterruptArgs

    async def call(self, args: InterruptArgs, ctx: ToolContext) -> ToolOutput:
        agent = await self.find(ctx, args.agent_id, deep=True)  # any ancestor
        if agent is None or not await self.reach.interrupt(ctx, agent):
            return ToolOutput.error(texts.unavailable(args.agent_id), "NOT_RESUMABLE")
        return ToolOutput.text(texts.interrupt_requested(args.agent_id))


class ReportTool(SteeringTool[ReportArgs]):
    """``report {output}``: a continuable child's message to its parent (at the parent's next step)."""

    name = "report"
    description = (
        "Send a result or finding to the agent that started you; it does not see your work "
        "otherwise. Reporting does not end your turn. Call it once with your final result, "
        "and earlier for findings that change what that agent should do."
    )
    args_model = ReportArgs

    async def call(self, args: ReportArgs, ctx: ToolContext) -> ToolOutput:
        relay = texts.report_relay(ctx.session_id, args.output)
        if not await self.reach.report(ctx, relay):
            return ToolOutput.error(texts.PARENT_NOT_LIVE, "PARENT_UNAVAILABLE")
        return ToolOutput.text(texts.report_accepted(relay["id"]))

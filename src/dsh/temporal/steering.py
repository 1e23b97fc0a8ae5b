"""The tools that steer background children, on Temporal: ``send_message``, ``list_agents``,
``interrupt_agent`` and a background child's ``report`` over workflows instead of in-process agents.

Same names, arguments and result texts as ``dsh.subagents.control``; what differs is the
reach. A child is a stored continuable child (``dsh.subagents.lifecycle``) whose turns run
in its own workflow, on any worker: ``send_message`` and ``report`` send their message with the
``wake`` signal (``dsh.temporal.waking``: a child not running gets a woken turn for it),
``interrupt_agent`` signals ``cancel`` to the descendant's workflow (its turn ends
``aborted``; its inbox is kept), ``list_agents`` says ``running`` for a child whose
workflow runs and ``ready`` for one only in storage. :func:`steered` gives a worker's
recipe these in place of the in-process ones.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from temporalio.client import Client

from dsh.events.descriptor import find_descriptor
from dsh.subagents import delegate, texts
from dsh.subagents.control import (
    InterruptAgentTool,
    InterruptArgs,
    ListAgentsTool,
    ListArgs,
    ReportArgs,
    ReportTool,
    SendArgs,
    SendMessageTool,
)
from dsh.subagents.lifecycle import StoredChild, stored_children
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.waking import running, send
from dsh.temporal.workflow import TurnWorkflow, workflow_id
from dsh.tools import Tool, ToolContext, ToolLike, ToolOutput
from dsh.tools.base import A
from dsh.tools.registry import ToolRegistry


@dataclass(frozen=True, slots=True)
class Courier:
    """What the steering tools reach other sessions with: the worker's client, store and queue."""

    client: Client
    recipe: AgentRecipe
    task_queue: str

    async def below(self, ancestor: str) -> list[tuple[str, StoredChild]]:
        """Every stored continuable child below ``ancestor`` as (its parent, it), parents first."""
        out: list[tuple[str, StoredChild]] = []
        frontier = [ancestor]
        while frontier:
            found = [(p, c) for p in frontier for c in await stored_children(self.recipe.store, p)]
            out.extend(found)
            frontier = [c.id for _, c in found]
        return out


class _Steering(Tool[A]):
    def __init__(self, courier: Courier) -> None:
        self.courier = courier


class SendMessage(_Steering[SendArgs]):
    """``send_message``: the message becomes the child's next turn, in its workflow."""

    name = SendMessageTool.name
    description = SendMessageTool.description
    args_model = SendArgs

    async def call(self, args: SendArgs, ctx: ToolContext) -> ToolOutput:
        courier = self.courier
        mine = {c.id for c in await stored_children(courier.recipe.store, ctx.session_id)}
        if args.subagent_id not in mine:
            return ToolOutput.error(texts.unavailable(args.subagent_id), "NOT_RESUMABLE")
        relay = texts.coordinator_relay(ctx.session_id, args.message)
        store, queue = courier.recipe.store, courier.task_queue
        await send(courier.client, store, args.subagent_id, relay, queue, next_turn=True)
        return ToolOutput.text(texts.queued(args.subagent_id))


class ListAgents(_Steering[ListArgs]):
    """``list_agents``: the caller's stored children, ``running`` while their workflow runs."""

    name = ListAgentsTool.name
    description = ListAgentsTool.description
    args_model = ListArgs

    async def call(self, args: ListArgs, ctx: ToolContext) -> ToolOutput:
        courier = self.courier
        deep = args.scope == "descendants"
        found = (
            await courier.below(ctx.session_id)
            if deep
            else [(ctx.session_id, c) for c in await stored_children(courier.recipe.store, ctx.session_id)]
        )
        base = delegate.parent_depth(min((c.depth for _, c in found), default=delegate.child_depth(0)))
        lines = []
        for parent, child in found:
            status = "running" if await running(courier.client, child.id) else "ready"
            where = parent if deep else None
            lines.append(
                texts.agent_line(
                    child.id, status, child.label, parent=where, depth=delegate.depth_below(child.depth, base)
                )
            )
        return ToolOutput.text("\n".join(lines) if lines else texts.NO_SUBAGENTS)


class InterruptAgent(_Steering[InterruptArgs]):
    """``interrupt_agent``: ``cancel`` to a descendant's running workflow."""

    name = InterruptAgentTool.name
    description = InterruptAgentTool.description
    args_model = InterruptArgs

    async def call(self, args: InterruptArgs, ctx: ToolContext) -> ToolOutput:
        courier = self.courier
        if args.agent_id not in {c.id for _, c in await courier.below(ctx.session_id)}:
            return ToolOutput.error(texts.unavailable(args.agent_id), "NOT_RESUMABLE")
        if await running(courier.client, args.agent_id):  # an idle one: nothing to stop
            await courier.client.get_workflow_handle(workflow_id(args.agent_id)).signal(TurnWorkflow.cancel)
        return ToolOutput.text(texts.interrupt_requested(args.agent_id))


class Report(_Steering[ReportArgs]):
    """``report``: a background child's message to its parent, at the parent's next step
    (or opening its next turn when none runs)."""

    name = ReportTool.name
    description = ReportTool.description
    args_model = ReportArgs

    async def call(self, args: ReportArgs, ctx: ToolContext) -> ToolOutput:
        courier = self.courier
        loaded = await courier.recipe.store.load(ctx.session_id)
        found = find_descriptor(loaded.own_events)
        parent = found.parent_session if found is not None and found.mode == "continuable" else None
        if parent is None:
            return ToolOutput.error(texts.PARENT_NOT_LIVE, "PARENT_UNAVAILABLE")
        relay = texts.report_relay(ctx.session_id, args.output)
        await send(courier.client, courier.recipe.store, parent, relay, courier.task_queue, next_turn=False)
        return ToolOutput.text(texts.report_accepted(relay["id"]))


def steered(recipe: AgentRecipe, client: Client, task_queue: str) -> AgentRecipe:
    """``recipe`` with these tools in place of the in-process steering tools it has, and a
    background child's tool set: the same plus ``report`` (as ``with_report`` gives it)."""
    courier = Courier(client, recipe, task_queue)
    tools = recipe.tools
    out: list[ToolLike] = []
    for name in tools.names():
        tool = tools.get(name)
        assert tool is not None
        if isinstance(tool, SendMessageTool):
            tool = SendMessage(courier)
        elif isinstance(tool, ListAgentsTool):
            tool = ListAgents(courier)
        elif isinstance(tool, InterruptAgentTool):
            tool = InterruptAgent(courier)
        out.append(tool)
    extra = [] if "report" in tools else [Report(courier)]
    continuable = ToolRegistry([*out, *extra], spill=tools.spill)
    return replace(recipe, tools=ToolRegistry(out, spill=tools.spill), continuable_tools=continuable)

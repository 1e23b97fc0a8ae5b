"""The steering tools' reach on Temporal: other sessions as workflows instead of in-process agents.

The tools themselves (``send_message``, ``list_agents``, ``interrupt_agent``, ``report``)
are ``dsh.subagents.control``'s, with their rules and texts; this is only
:class:`~dsh.subagents.steering.SteeringReach` over workflows. A child is a stored
continuable child (``dsh.subagents.lifecycle``) whose turns run in its own workflow, on any
worker: a message to it or a ``report`` to a parent goes with the ``wake`` signal
(``dsh.temporal.waking``: a session not running gets a woken turn for it), an interrupt is
``cancel`` to the descendant's running workflow (its turn ends ``aborted``; its inbox is
kept), and a child is ``running`` while its workflow runs, else ``ready``. :func:`steered`
gives a worker's recipe the tools over this reach in place of the in-process one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from temporalio.client import Client

from dsh.events.descriptor import find_descriptor
from dsh.events.messages import Message
from dsh.subagents.control import ReportTool, SteeringTool
from dsh.subagents.lifecycle import StoredChild, stored_children
from dsh.subagents.steering import Reached
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.waking import running, send
from dsh.temporal.workflow import TurnWorkflow, workflow_id
from dsh.tools import ToolContext, ToolLike
from dsh.tools.registry import ToolRegistry


@dataclass(frozen=True, slots=True)
class TemporalReach:
    """:class:`~dsh.subagents.steering.SteeringReach` over workflows: the worker's client,
    recipe (its store) and task queue."""

    client: Client
    recipe: AgentRecipe
    task_queue: str

    async def children(self, ctx: ToolContext, parent_id: str) -> list[Reached]:
        found = await stored_children(self.recipe.store, parent_id)
        return [Reached(c, "running" if await running(self.client, c.id) else "ready") for c in found]

    async def message(self, ctx: ToolContext, child: StoredChild, message: Message) -> bool:
        await send(self.client, self.recipe.store, child.id, message, self.task_queue, next_turn=True)
        return True

    async def interrupt(self, ctx: ToolContext, agent: StoredChild) -> bool:
        if await running(self.client, agent.id):  # an idle one: nothing to stop
            await self.client.get_workflow_handle(workflow_id(agent.id)).signal(TurnWorkflow.cancel)
        return True

    async def report(self, ctx: ToolContext, message: Message) -> bool:
        loaded = await self.recipe.store.load(ctx.session_id)
        found = find_descriptor(loaded.own_events)
        parent = found.parent_session if found is not None and found.mode == "continuable" else None
        if parent is None:
            return False
        await send(self.client, self.recipe.store, parent, message, self.task_queue, next_turn=False)
        return True


def steered(recipe: AgentRecipe, client: Client, task_queue: str) -> AgentRecipe:
    """``recipe`` with its steering tools over workflows instead of in-process agents, and a
    background child's tool set: the same plus ``report`` (as ``with_report`` gives it)."""
    reach = TemporalReach(client, recipe, task_queue)
    tools = recipe.tools
    out: list[ToolLike] = []
    for name in tools.names():
        tool = tools.get(name)
        assert tool is not None
        out.append(type(tool)(reach) if isinstance(tool, SteeringTool) else tool)
    extra = [] if "report" in tools else [ReportTool(reach)]
    continuable = ToolRegistry([*out, *extra], spill=tools.spill)
    return replace(recipe, tools=ToolRegistry(out, spill=tools.spill), continuable_tools=continuable)

"""Woken turns on Temporal: work queued in a session's inbox runs as turns of its workflow.

Whoever queues work for another session (a background child's settlement notice for its
parent, ``send_message`` for a child) logs it in that session's inbox under its lease —
``next-step`` when the session's workflow is running a turn, ``next-turn`` when not — and
then :func:`wake`\\ s it: a signal-with-start of ``dsh-session-<id>`` that signals ``wake``
to the running workflow, or starts a woken turn (no prompt: its first step claims the
inbox) when none runs. A workflow signalled ``wake`` checks its inbox when its turn ends and
runs another woken turn (continue-as-new) while work waits. :func:`settle` is a background
child's activation end: one notice to its parent (``dsh.subagents.texts``), as in-process.
"""

from __future__ import annotations

from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError

from dsh.events.descriptor import find_descriptor
from dsh.events.messages import Message
from dsh.loop.inbox import Target
from dsh.store import EventStore
from dsh.subagents import texts
from dsh.subagents.children import closing_blocks
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.refs import Delegated, Settling, TurnInput
from dsh.temporal.workflow import TurnWorkflow, workflow_id


async def running(client: Client, session_id: str) -> bool:
    """Whether ``dsh-session-<session_id>`` has a run going now."""
    try:
        described = await client.get_workflow_handle(workflow_id(session_id)).describe()
    except RPCError:  # never started
        return False
    return described.raw_description.workflow_execution_info.status == (
        WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
    )


async def woken_input(store: EventStore, session_id: str) -> TurnInput:
    """A woken turn of ``session_id`` from its next seq; a child keeps its delegation."""
    loaded = await store.load(session_id)
    found = find_descriptor(loaded.own_events)
    delegated = None
    if found is not None and found.parent_session is not None and found.call_id is not None:
        delegated = Delegated(
            found.parent_session,
            found.call_id,
            found.label or "",
            found.provider or "spawn",
            found.mode == "continuable",
        )
    return TurnInput(session_id, len(loaded.events), None, delegated)


async def wake(client: Client, store: EventStore, session_id: str, task_queue: str) -> None:
    """Signal ``wake`` to the session's workflow, starting a woken turn when none runs."""
    await client.start_workflow(
        TurnWorkflow.run,
        await woken_input(store, session_id),
        id=workflow_id(session_id),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        start_signal="wake",
    )


async def queue_and_wake(
    recipe: AgentRecipe, client: Client, session_id: str, message: Message, task_queue: str
) -> None:
    """Log ``message`` in ``session_id``'s inbox (see the module for the target), then wake it."""
    target: Target = "next-step" if await running(client, session_id) else "next-turn"
    async with recipe.agent(session_id) as agent:
        agent.deliver(message, target)
        await agent.checkpoint()
    await wake(client, recipe.store, session_id, task_queue)


async def settle(recipe: AgentRecipe, client: Client, settling: Settling, task_queue: str) -> bool:
    """A background child's activation ended: its notice to the parent, which is woken."""
    loaded = await recipe.store.load(settling.session_id)
    notice = texts.settlement_notice(
        settling.session_id, settling.ending.kind, closing_blocks(loaded.own_events)
    )
    parent = settling.delegated.parent_session
    await queue_and_wake(recipe, client, parent, notice, task_queue)
    return True

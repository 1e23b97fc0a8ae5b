"""Messages between sessions on Temporal: sent with a signal, logged by the recipient's workflow.

A session that has a message for another (a background child's settlement notice or
``report`` for its parent, a parent's ``send_message`` for a child) stores it as an
attachment and sends its id with the ``wake`` signal of ``dsh-session-<recipient>`` — a
signal-with-start: a workflow running there gets it, else a woken turn (no prompt) starts
for it. No one waits for the recipient's store lease (its model call may hold it for long):
the recipient's workflow logs what it was sent between its own activities (:func:`take`,
the ``dsh.take_inbound`` activity) — before each step while a turn runs, and when a turn
ends, going on with a woken turn (continue-as-new) while its inbox holds work. Message ids
make the intake idempotent: one already in the log is not queued twice.
"""

from __future__ import annotations

import uuid
from typing import Final

from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError

from dsh.events.attachments import Attachment
from dsh.events.descriptor import find_descriptor
from dsh.events.messages import Message
from dsh.events.vocabulary import INBOX_SPLICED
from dsh.jsonx import dumps, loads
from dsh.loop import Agent
from dsh.store import EventStore
from dsh.subagents import texts
from dsh.subagents.children import closing_blocks
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.refs import Delegated, Inbound, Intake, Settling, TurnInput
from dsh.temporal.workflow import TurnWorkflow, workflow_id

NOTICE_IDS: Final = uuid.UUID("0e6f7a52-3c1b-4d9e-8f20-5a4b3c2d1e0f")
"""The namespace of settlement notices' ids: ``uuid5(NOTICE_IDS, "<child>/<turn>")`` (a retry
sends the same notice)."""
MESSAGE_TYPE: Final = "application/json"


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
            found.provider_kind,
            found.mode == "continuable",
        )
    return TurnInput(session_id, len(loaded.events), None, delegated)


async def send(
    client: Client, store: EventStore, session_id: str, message: Message, task_queue: str, *, next_turn: bool
) -> None:
    """Send ``message`` to ``session_id``'s inbox (see the module), waking it."""
    attachment = await store.put_attachment(Attachment(MESSAGE_TYPE, dumps(message)))
    await client.start_workflow(
        TurnWorkflow.run,
        await woken_input(store, session_id),
        id=workflow_id(session_id),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        start_signal="wake",
        start_signal_args=[Inbound(attachment, next_turn)],
    )


def _queued_ids(agent: Agent) -> set[str]:
    """The ids of every message the session's inbox ever took."""
    out: set[str] = set()
    for event in agent.session.events:
        if event.type == INBOX_SPLICED and isinstance(event.data, dict):
            for message in event.data.get("inserted", ()):
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    out.add(message["id"])
    return out


async def take(recipe: AgentRecipe, intake: Intake) -> int | None:
    """Log the messages sent to the session; the seq a woken turn starts at when its inbox
    holds work (``None``: nothing waits)."""
    async with recipe.agent(intake.session_id) as agent:
        seen = _queued_ids(agent)
        for item in intake.items:
            stored = await recipe.store.get_attachment(item.attachment)
            message = loads(stored.data) if stored is not None else None
            if not isinstance(message, dict) or message.get("id") in seen:
                continue
            target = "next-turn" if item.next_turn or not intake.running else "next-step"
            agent.deliver(message, target)  # type: ignore[arg-type]
        await agent.checkpoint()
        return agent.session.next_seq if agent.inbox.has_work else None


async def settle(recipe: AgentRecipe, client: Client, settling: Settling, task_queue: str) -> bool:
    """A background child's activation ended: its notice to the parent, which is woken."""
    child = settling.session_id
    loaded = await recipe.store.load(child)
    notice = texts.settlement_notice(child, settling.ending.kind, closing_blocks(loaded.own_events))
    notice["id"] = str(uuid.uuid5(NOTICE_IDS, f"{child}/{settling.turn}"))
    parent = settling.delegated.parent_session
    await send(client, recipe.store, parent, notice, task_queue, next_turn=False)
    return True

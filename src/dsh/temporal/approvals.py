"""Approvals as signals: an activity's approval request is answered by the workflow's ``approve`` signal.

The asking activity logs the request as usual (``approval/asked``) and checkpoints it, so a
client tailing the store sees it (:func:`asked_request`, what ``dsh run --temporal`` answers),
then polls its workflow's ``decision`` query for the call's answer while it keeps
heartbeating; the answer is logged as ``approval/decided``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, cast

from temporalio.client import Client

from dsh.events import Event
from dsh.events.vocabulary import APPROVAL_ASKED
from dsh.temporal.workflow import TurnWorkflow, workflow_id
from dsh.tools.approval import OUTCOMES, ApprovalOutcome, ApprovalRequest

POLL_S: Final = 0.5


class SignalApprover:
    """Waits for the ``approve`` signal of the session's turn workflow."""

    def __init__(self, client: Client, session_id: str) -> None:
        self._client = client
        self._workflow_id = workflow_id(session_id)
        self.checkpoint: Callable[[], Awaitable[None]] | None = None
        """Makes the logged request durable before waiting (the asking agent's ``checkpoint``)."""

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        if request.call_id is None:
            return "unavailable"
        if self.checkpoint is not None:
            await self.checkpoint()
        handle = self._client.get_workflow_handle(self._workflow_id)
        while True:
            answer = await handle.query(TurnWorkflow.decision, request.call_id)
            if answer is not None:
                return cast("ApprovalOutcome", answer) if answer in OUTCOMES else "unavailable"
            await asyncio.sleep(POLL_S)


def asked_request(session_id: str, event: Event) -> ApprovalRequest | None:
    """The request an ``approval/asked`` event of ``session_id`` logged, for a client to answer
    with :meth:`~dsh.temporal.SubmittedTurn.approve` (``None``: another event, or a request
    without a tool call, which the signal cannot name). The log keeps the tool and the
    reason, not an escalation's details; "allow for the session" covers the same tool."""
    data = event.data if event.type == APPROVAL_ASKED and isinstance(event.data, dict) else None
    if data is None or not isinstance(data.get("callId"), str):
        return None
    tool = str(data.get("toolName", ""))
    reason = data.get("reason")
    return ApprovalRequest(
        session_id, tool, data["callId"], reason if isinstance(reason, str) else None, f"tool:{tool}"
    )

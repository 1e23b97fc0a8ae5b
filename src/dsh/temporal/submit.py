"""Submitting a turn: the prompt into the store, then a turn workflow ``dsh-session-<id>`` for it.

The client writes what only it knows before the workflow starts — a new session's header
(its cwd), the prompt's text as an attachment — under the session's store lease, and
releases it: from then on the workflow's activities are the session's one writer. A
session another process holds (``dsh run``) is busy as always; one whose workflow is
running is busy too (:class:`~dsh.errors.SessionRunningError`): the workflow id is the lease,
looked at before the store's (whose holder, while a turn runs, is whichever worker's activity
has it now).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import (
    Client,
    WorkflowContinuedAsNewError,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError

from dsh.errors import SessionBusyError, SessionRunningError, TemporalError
from dsh.events import SessionHeader
from dsh.events.attachments import Attachment
from dsh.events.payloads import turn_end_of
from dsh.ids import new_session_id, now_ms
from dsh.loop import TurnResult
from dsh.loop.prompt import check_prompt
from dsh.session import final_assistant_text, usage_totals
from dsh.store import EventStore
from dsh.temporal.activities import ending_of, reason_of
from dsh.temporal.refs import ApprovalDecision, TurnInput, TurnOutcome
from dsh.temporal.workflow import TurnWorkflow, workflow_id


@dataclass(frozen=True, slots=True)
class SubmittedTurn:
    """A turn handed to Temporal: its session, the seq its events start at, its workflow."""

    session_id: str
    from_seq: int
    handle: WorkflowHandle[TurnWorkflow, TurnOutcome]

    async def outcome(self, store: EventStore | None = None) -> TurnOutcome:
        """Wait for the turn to end; a run that failed is its one line (busy: ``SessionBusyError``).

        A run that went on with a woken turn (its inbox held work: continue-as-new) ended this
        turn in the log: with ``store`` its ending is read there, else the last run's is awaited.
        """
        try:
            return await self.handle.result(follow_runs=store is None)
        except WorkflowContinuedAsNewError:
            assert store is not None
            return await ended_in(store, self.session_id, self.from_seq)
        except WorkflowFailureError as exc:
            cause: BaseException = exc
            while cause.__cause__ is not None:
                cause = cause.__cause__
            if isinstance(cause, ApplicationError) and cause.type == "SessionBusyError":
                raise SessionBusyError(self.session_id, None, None, None) from exc
            raise TemporalError(f"turn of session {self.session_id} failed: {cause}") from exc

    async def result(self, store: EventStore) -> TurnResult:
        """:meth:`outcome` as ``Agent.run_turn``'s result, its text and usage read from ``store``."""
        outcome = await self.outcome(store)
        own = (await store.load(self.session_id)).events[self.from_seq :]
        return TurnResult(
            self.session_id,
            outcome.turn,
            reason_of(outcome.ending),
            final_assistant_text(own),
            usage_totals(own),
        )

    async def cancel(self) -> None:
        """Stop the turn (it ends ``aborted``; the running tool or model call is cancelled)."""
        await self.handle.signal(TurnWorkflow.cancel)

    async def terminate(self, reason: str) -> None:
        """End the workflow at once, whatever runs (a turn a worker opened is left open in the
        log, as a crash leaves it; its next turn repairs it)."""
        with contextlib.suppress(RPCError):  # it ended meanwhile: nothing left to end
            await self.handle.terminate(reason=reason)

    async def approve(self, call_id: str, outcome: str = "allowed-once") -> None:
        """Answer tool call ``call_id``'s approval request."""
        await self.handle.signal(TurnWorkflow.approve, ApprovalDecision(call_id, outcome))


async def ended_in(store: EventStore, session_id: str, from_seq: int) -> TurnOutcome:
    """The outcome of the turn after ``from_seq`` as its ``turn/end`` logged it."""
    for event in (await store.load(session_id)).events[from_seq:]:
        end = turn_end_of(event)
        if end is not None:
            return TurnOutcome(session_id, end["turn"], ending_of(end.get("reason") or {"kind": "error"}))
    raise TemporalError(
        f"turn of session {session_id} went on without ending (no turn/end after seq {from_seq})"
    )


def _absolute(path: str | Path) -> str:
    return os.path.abspath(path)


async def _prepare(
    store: EventStore, prompt: str, session_id: str | None, cwd: str | Path
) -> tuple[str, int, str]:
    """Under the session's lease: a new session's header, the stored prompt, the next seq."""
    sid = session_id or new_session_id()
    lease = await store.lease(sid)  # another runner holds it: SessionBusyError, as dsh run says
    try:
        if session_id is None:
            await store.create(SessionHeader(id=sid, created_at=now_ms(), cwd=_absolute(cwd)))
            from_seq = 0
        else:
            from_seq = len((await store.load(sid)).events)
        prompt_id = await store.put_attachment(Attachment("text/plain", prompt.encode("utf-8")))
    finally:
        await lease.release()
    return sid, from_seq, prompt_id


async def _not_running(client: Client, session_id: str) -> None:
    """Raise :class:`SessionRunningError` when the session's turn workflow is running."""
    wid = workflow_id(session_id)
    try:
        described = await client.get_workflow_handle(wid).describe()
    except RPCError:
        return  # never started (or gone): the store's lease decides
    if described.status == WorkflowExecutionStatus.RUNNING:
        raise SessionRunningError(session_id, wid)


async def submit_turn(
    client: Client,
    prompt: str,
    *,
    task_queue: str,
    store: EventStore,
    session_id: str | None = None,
    cwd: str | Path = ".",
) -> SubmittedTurn:
    """Start a turn of ``session_id`` (``None``: a new session in ``cwd``) on ``task_queue``.

    The workers of the queue must run over ``store`` (the same store, see
    ``dsh.temporal.sharing``). Returns at once; :meth:`SubmittedTurn.result` waits.
    """
    check_prompt(prompt)
    if session_id is not None:
        await _not_running(client, session_id)
    sid, from_seq, prompt_id = await _prepare(store, prompt, session_id, cwd)
    wid = workflow_id(sid)
    try:
        handle = await client.start_workflow(
            TurnWorkflow.run,
            TurnInput(sid, from_seq, prompt_id),
            id=wid,
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
    except WorkflowAlreadyStartedError as exc:
        raise SessionRunningError(sid, wid) from exc
    return SubmittedTurn(sid, from_seq, handle)

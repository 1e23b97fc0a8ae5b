"""The turn's activities: each opens the stored session, does one piece, logs it, returns a reference.

Every activity heartbeats while it works (a killed worker is noticed after
``HEARTBEAT_TIMEOUT``) and is idempotent against the log (``dsh.loop.stepwise``): a retry on
another worker first reads what the session holds and repeats nothing that is logged.
Failures a retry cannot mend (a missing session or prompt, bad input) are raised
non-retryable with their one-line message. A busy session is retried: its holder is most
often an earlier attempt of the same activity, still running on a worker that was slow to
heartbeat (Temporal already retried it elsewhere); the lease keeps the two from writing at
once, and the later attempt then finds the earlier one's work in the log.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager, nullcontext
from typing import Any, Final, TypeVar, cast

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from dsh.errors import DshError, SessionNotFoundError, UsageError
from dsh.events.attachments import Attachment
from dsh.events.messages import Message, user_message
from dsh.events.payloads import TurnEndReason, aborted_reason, error_reason
from dsh.jsonx import dumps, loads
from dsh.model import Delegation
from dsh.subagents import Agent, delegate
from dsh.temporal.approvals import SignalApprover
from dsh.temporal.attempts import Attempts
from dsh.temporal.children import delegates, finish_child, start_child
from dsh.temporal.jobs import WorkerJobs
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.refs import (
    Call,
    CallInput,
    CallsInput,
    CallsRan,
    ChildFinished,
    ChildOpened,
    ChildStarted,
    Delegated,
    Ending,
    EndInput,
    Intake,
    Settling,
    StepInput,
    StepSettled,
    StopInput,
    Stopped,
    TurnBegun,
    TurnInput,
    TurnOutcome,
)
from dsh.temporal.spooling import spooling
from dsh.temporal.waking import MESSAGE_TYPE, settle, take
from dsh.tools.approval import Approver

HEARTBEAT_EVERY: Final = 1.0
T = TypeVar("T")


async def heartbeating(work: Awaitable[T]) -> T:
    """``work``, with a heartbeat every :data:`HEARTBEAT_EVERY` seconds until it is done;
    dsh's refusals that a retry cannot mend become non-retryable errors."""

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(HEARTBEAT_EVERY)

    beater = asyncio.create_task(beat())
    try:
        return await work
    except (SessionNotFoundError, UsageError) as exc:
        raise ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True) from exc
    except DshError as exc:
        raise ApplicationError(str(exc), type=type(exc).__name__) from exc
    finally:
        beater.cancel()


def reason_of(ending: Ending) -> TurnEndReason:
    """The logged ``turn/end`` reason of ``ending``."""
    if ending.kind == "error":
        return error_reason(ending.code or "UNKNOWN", ending.message or "")
    if ending.kind == "aborted":
        return aborted_reason(ending.by or "user")
    return {"kind": ending.kind}


def ending_of(reason: TurnEndReason) -> Ending:
    """``reason`` as an :class:`Ending` (what a workflow carries)."""
    failure = reason.get("failure")
    cause = reason.get("reason")
    code, message = (failure["code"], failure["message"]) if failure else (None, None)
    return Ending(reason["kind"], code, message, cause["kind"] if cause else None)


def _delegation(delegated: Delegated | None) -> Delegation | None:
    return None if delegated is None else Delegation(delegated.parent_session, delegated.call_id)


class TurnActivities:
    """The activities of :class:`~dsh.temporal.workflow.TurnWorkflow` over one worker's recipe."""

    def __init__(self, recipe: AgentRecipe, client: Client | None = None) -> None:
        self._recipe = recipe
        self._client = client
        self._attempts = Attempts()
        self.jobs = None if client is None else WorkerJobs(client, recipe.store)
        """The worker's background jobs (``dsh.temporal.jobs``; ``None`` without a client:
        an agent's jobs end with its activity)."""

    async def _run(self, work: Coroutine[Any, Any, T]) -> T:
        """``work`` as its activity's one running attempt on this worker, heartbeating."""
        return await heartbeating(self._attempts.sole(work))

    @asynccontextmanager
    async def _agent(
        self,
        session_id: str,
        delegated: Delegated | None,
        approver: Callable[[str], Approver] | None = None,
    ) -> AsyncIterator[Agent]:
        """The recipe's agent over ``session_id`` as the child ``delegated`` says it is, its
        background jobs the worker's (they outlive the activity)."""
        continuable = delegated is not None and delegated.continuable
        delegation = _delegation(delegated)
        async with self._recipe.agent(
            session_id, delegation=delegation, approver=approver, continuable=continuable
        ) as agent:
            if self.jobs is not None:
                self.jobs.lend(agent, activity.info().task_queue)
            yield agent

    def _approver(self) -> Callable[[str], Approver] | None:
        client = self._client
        return None if client is None else (lambda session_id: SignalApprover(client, session_id))

    async def _prompt(self, attachment_id: str) -> Message:
        stored = await self._recipe.store.get_attachment(attachment_id)
        if stored is None:
            message = f"the turn's prompt {attachment_id} is not in the store (was it submitted to another?)"
            raise ApplicationError(message, type="PromptNotFound", non_retryable=True)
        return user_message(stored.data.decode("utf-8"))

    @activity.defn(name="dsh.begin_turn")
    async def begin_turn(self, turn: TurnInput) -> TurnBegun:
        """Open the turn (a delegated child's descriptor first)."""
        return await self._run(self._begin(turn))

    async def _begin(self, turn: TurnInput) -> TurnBegun:
        preamble = []
        d = turn.delegated  # a one-shot child's prompted turn logs its descriptor (not a woken one)
        if d is not None and not d.continuable and turn.prompt is not None:
            preamble.append(
                delegate.descriptor_event(
                    continuable=False,
                    mode=d.mode,
                    label=d.label,
                    parent_session=d.parent_session,
                    call_id=d.call_id,
                )
            )
        async with self._agent(turn.session_id, turn.delegated) as agent:
            number = await agent.stepwise().begin(turn.from_seq, preamble, woken=turn.prompt is None)
            return TurnBegun(number, agent.config.max_steps)

    @activity.defn(name="dsh.model_step")
    async def model_step(self, step: StepInput) -> StepSettled:
        """One model step, unless its settlement is logged."""
        return await self._run(self._step(step))

    async def _step(self, step: StepInput) -> StepSettled:
        prompt = await self._prompt(step.prompt) if step.prompt is not None else None
        carried = await self._stored_messages(step.carried)
        async with self._agent(step.session_id, step.delegated) as agent:
            live = spooling(agent, self._recipe.store) if step.delegated is None else nullcontext()
            async with live:  # a delegated child's deltas are not shown: only a submitted session's
                out = await agent.stepwise().model_step(
                    step.turn, step.step, step.from_seq, prompt, woken=step.woken, carried=carried
                )
        calls = tuple(Call(c.call_id, c.name, delegates(self._recipe, c.name)) for c in out.calls)
        failure = out.failure
        code, message = (failure["code"], failure["message"]) if failure is not None else (None, None)
        next_step = await self._store_messages(out.next_step)
        return StepSettled(calls, out.max_tokens, code, message, out.blocked, next_step)

    @activity.defn(name="dsh.tool_call")
    async def tool_call(self, call: CallInput) -> bool:
        """One tool call, unless its result is logged; ``True`` when it ran now."""
        return await self._run(self._tool(call))

    async def _tool(self, call: CallInput) -> bool:
        async with self._agent(call.session_id, call.delegated, approver=self._approver()) as agent:
            return await agent.stepwise().tool_call(call.turn, call.step, call.from_seq, call.call_id)

    @activity.defn(name="dsh.tool_calls")
    async def tool_calls(self, calls: CallsInput) -> bool:
        """A step's calls run together as the loop runs them (hooks, concurrency-safe calls
        at once, results in model order), except those whose result is logged; ``True``
        when one ran now."""
        return await self._run(self._ran(calls))

    async def _tools(self, calls: CallsInput) -> tuple[bool, tuple[Message, ...]]:
        async with self._agent(calls.session_id, calls.delegated, approver=self._approver()) as agent:
            ran = await agent.stepwise().tool_calls(calls.turn, calls.step, calls.from_seq, calls.call_ids)
        return ran.ran, ran.next_step

    async def _ran(self, calls: CallsInput) -> bool:
        return (await self._tools(calls))[0]

    @activity.defn(name="dsh.step_tools")
    async def step_tools(self, calls: CallsInput) -> CallsRan:
        """:meth:`tool_calls`, the messages their hooks gave the next step stored (by id)."""
        return await self._run(self._step_tools(calls))

    async def _step_tools(self, calls: CallsInput) -> CallsRan:
        _, next_step = await self._tools(calls)
        return CallsRan(await self._store_messages(next_step))

    async def _store_messages(self, messages: Sequence[Message]) -> tuple[str, ...]:
        """``messages`` as attachments (what a reference carries to the next activity)."""
        store = self._recipe.store
        return tuple([await store.put_attachment(Attachment(MESSAGE_TYPE, dumps(m))) for m in messages])

    async def _stored_messages(self, ids: Sequence[str]) -> list[Message]:
        out: list[Message] = []
        for attachment_id in ids:
            stored = await self._recipe.store.get_attachment(attachment_id)
            if stored is None:
                message = (
                    f"the step's message {attachment_id} is not in the store (was it submitted to another?)"
                )
                raise ApplicationError(message, type="MessageNotFound", non_retryable=True)
            out.append(cast("Message", loads(stored.data)))
        return out

    @activity.defn(name="dsh.stop_turn")
    async def stop_turn(self, stop: StopInput) -> Stopped:
        """The plan's ``AskStop`` after a step's calls: the step's ``step/end``, then the ``Stop``
        hooks; a block's messages stored (by id) for the next step."""
        return await self._run(self._stop(stop))

    async def _stop(self, stop: StopInput) -> Stopped:
        async with self._agent(stop.session_id, stop.delegated) as agent:
            steer = await agent.stepwise().stop(stop.turn, stop.from_seq)
        return Stopped(await self._store_messages(steer))

    @activity.defn(name="dsh.end_turn")
    async def end_turn(self, end: EndInput) -> TurnOutcome:
        """Close the turn with its ending, unless its ``turn/end`` is logged."""
        return await self._run(self._end(end))

    async def _end(self, end: EndInput) -> TurnOutcome:
        async with self._agent(end.session_id, end.delegated) as agent:
            result = await agent.stepwise().end(end.turn, end.from_seq, reason_of(end.ending))
        return TurnOutcome(end.session_id, end.turn, ending_of(result.reason))

    @activity.defn(name="dsh.start_child")
    async def start_child(self, call: CallInput) -> ChildStarted | ChildOpened | None:
        """A foreground ``subagent`` call's child session, stored for a child workflow
        (``None``: the call runs as an ordinary tool call); with ``call.carrying``, in a
        :class:`ChildOpened` with what the call's hooks gave the next step (stored by id)."""
        return await self._run(self._start_child(call))

    async def _start_child(self, call: CallInput) -> ChildStarted | ChildOpened | None:
        context: list[Message] = []
        started = await start_child(self._recipe, call, context)
        return ChildOpened(started, await self._store_messages(context)) if call.carrying else started

    @activity.defn(name="dsh.finish_child")
    async def finish_child(self, finished: ChildFinished) -> bool | CallsRan:
        """The parent's call settled with its child's answer; with ``finished.carrying``,
        what its ``PostToolUse`` hooks gave the next step (stored by id)."""
        return await self._run(self._finish_child(finished))

    async def _finish_child(self, finished: ChildFinished) -> bool | CallsRan:
        context: list[Message] = []
        done = await finish_child(self._recipe, finished, context)
        return CallsRan(await self._store_messages(context)) if finished.carrying else done

    @activity.defn(name="dsh.take_inbound")
    async def take_inbound(self, intake: Intake) -> int | None:
        """Log the messages sent to the session; where a woken turn starts if work waits."""
        return await self._run(take(self._recipe, intake))

    @activity.defn(name="dsh.settle_child")
    async def settle_child(self, settling: Settling) -> bool:
        """A background child's activation ended: the notice to its parent, woken."""
        client = self._client
        if client is None:
            raise ApplicationError("settling a child needs the worker's client", non_retryable=True)
        return await self._run(settle(self._recipe, client, settling, activity.info().task_queue))

    def all(self) -> list[Callable[..., Awaitable[object]]]:
        """Every activity, for a worker."""
        return [
            self.begin_turn,
            self.model_step,
            self.tool_call,
            self.tool_calls,
            self.step_tools,
            self.stop_turn,
            self.end_turn,
            self.start_child,
            self.finish_child,
            self.take_inbound,
            self.settle_child,
        ]

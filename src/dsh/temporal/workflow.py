"""The turn workflow: the loop's decisions, deterministic, with every effect an activity.

A run opens the turn, then per step asks for one model step and runs its tool calls one
by one (a foreground ``subagent`` call as a child workflow), until a step settles without
calls, hits the token limit, fails or the step budget runs out; then it closes the turn.
Everything it passes is a reference (:mod:`dsh.temporal.refs`). ``cancel`` (a signal, or
Temporal's own cancellation) stops the activity running and ends the turn ``aborted``;
``approve`` answers a tool's approval request, which the activity reads with the
``decision`` query. This module imports only the refs and the loop's pure step budget
(:mod:`dsh.loop.plan`) and names activities by string, so Temporal's workflow sandbox has
nothing else to load.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Final, TypeVar, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.converter import value_to_type
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from dsh.loop import plan
    from dsh.temporal.refs import (
        ApprovalDecision,
        Call,
        CallInput,
        CallsInput,
        CallsRan,
        ChildFinished,
        ChildOpened,
        ChildStarted,
        Ending,
        EndInput,
        Inbound,
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

WORKFLOW_NAME: Final = "dsh-turn"
HEARTBEAT_TIMEOUT: Final = timedelta(seconds=3)
"""A worker that stops heartbeating for this long is taken for dead: its activity is retried."""
START_TO_CLOSE: Final = timedelta(minutes=30)
RETRIES: Final = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=5),
    maximum_attempts=20,
    non_retryable_error_types=["SessionNotFoundError", "UsageError"],
)

BATCHED_CALLS: Final = "dsh-batched-calls"
"""The ``workflow.patched`` id of a step's ordinary calls run together by one ``dsh.tool_calls``
activity (before it: one ``dsh.tool_call`` per call, which a run started then replays)."""

HOOKED_STEPS: Final = "dsh-hooked-steps"
"""The ``workflow.patched`` id of steps that carry their hooks' messages on: ``dsh.step_tools``
returns what the calls' hooks give the next step, ``dsh.model_step`` a ``UserPromptSubmit``
block and a ``Stop`` block's messages (before it: :data:`BATCHED_CALLS`' steps)."""

PLANNED_STEPS: Final = "dsh-planned-steps"
"""The ``workflow.patched`` id of steps after which the loop's :class:`~dsh.loop.plan.TurnPlan`
may ask the ``Stop`` hooks: when an earlier step was cut off at the token limit (the turn's
ending is set), a step whose calls ran is followed by ``dsh.stop_turn``, not by another step
unless work waits (before it: another step, as :data:`HOOKED_STEPS`' steps went on)."""

CHILD_HOOKS: Final = "dsh-child-hooks"
"""The ``workflow.patched`` id of delegation calls that carry their hooks' messages on, as the
loop's scheduler does: ``dsh.start_child`` returns a ``ChildOpened`` (``PreToolUse``'s, a
refusal's too), ``dsh.finish_child`` a ``CallsRan`` (``PostToolUse``'s); a call that gets no
child runs by ``dsh.step_tools`` (before it: ``dsh.tool_call``, and nothing carried)."""

T = TypeVar("T")


def workflow_id(session_id: str) -> str:
    """The one workflow id of a session's turn runs: two runners of a session cannot exist."""
    return f"dsh-session-{session_id}"


@workflow.defn(name=WORKFLOW_NAME)
class TurnWorkflow:
    """One turn of one session (see the module docstring)."""

    def __init__(self) -> None:
        self._cancelled = False
        self._woken = False
        self._inbound: list[Inbound] = []
        self._decisions: dict[str, str] = {}

    @workflow.signal
    def wake(self, inbound: Inbound | None = None) -> None:
        """A message for the session's inbox (``dsh.temporal.waking``): logged before the
        next step, or when the turn ends, which then goes on with a woken turn."""
        self._woken = True
        if inbound is not None:
            self._inbound.append(inbound)

    @workflow.signal
    def cancel(self) -> None:
        """Stop the turn: the running activity is cancelled, the turn ends ``aborted``."""
        self._cancelled = True

    @workflow.signal
    def approve(self, decision: ApprovalDecision) -> None:
        """Answer the approval request of tool call ``decision.call_id``."""
        self._decisions[decision.call_id] = decision.outcome

    @workflow.query
    def decision(self, call_id: str) -> str | None:
        """The answer given for ``call_id`` so far (``None``: none yet)."""
        return self._decisions.get(call_id)

    async def _act(self, name: str, arg: Any, result_type: type[T], *, stoppable: bool = True) -> T:
        """Run activity ``name``; a cancel stops it when ``stoppable`` (opening and closing
        the turn are not: they are short, and the turn must open to end ``aborted``)."""
        handle = workflow.start_activity(
            name,
            arg,
            result_type=result_type,
            start_to_close_timeout=START_TO_CLOSE,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RETRIES,
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        try:
            await workflow.wait_condition(lambda: (stoppable and self._cancelled) or handle.done())
        except asyncio.CancelledError:  # Temporal's own cancellation of this run: a cancel too
            self._cancelled = True
        if stoppable and self._cancelled and not handle.done():
            handle.cancel()
        return cast("T", await handle)

    @workflow.run
    async def run(self, given: Any = None) -> TurnOutcome:  # Any: decoded by ``_turn_input``
        turn_input = _turn_input(given)
        sid, start, delegated = turn_input.session_id, turn_input.from_seq, turn_input.delegated
        if turn_input.prompt is None and self._inbound:  # what woke it opens the turn
            await self._intake(sid, running=False)
        begun = await self._act("dsh.begin_turn", turn_input, TurnBegun, stoppable=False)
        try:
            ending = await self._steps(turn_input, begun)
        except (ActivityError, ChildWorkflowError) as exc:
            ending = self._aborted(delegated is not None) if self._cancelled else _failed(exc)
        closing = EndInput(sid, start, begun.turn, ending, delegated)
        outcome = await self._act("dsh.end_turn", closing, TurnOutcome, stoppable=False)
        continuable = delegated if delegated is not None and delegated.continuable else None
        woken_at = await self._intake(sid, running=False) if self._woken or continuable else None
        if woken_at is None and continuable is not None:  # the activation is over: the notice
            settling = Settling(sid, continuable, outcome.turn, outcome.ending)
            await self._act("dsh.settle_child", settling, bool, stoppable=False)
            if self._inbound:  # a message came while it settled: a new activation
                woken_at = await self._intake(sid, running=False)
        if woken_at is not None:  # the inbox holds work: a woken turn, in a fresh run
            workflow.continue_as_new(TurnInput(sid, woken_at, None, delegated))
        return outcome

    async def _intake(self, sid: str, *, running: bool) -> int | None:
        """Log what was sent to the session (until nothing more came meanwhile); the seq a
        woken turn starts at when its inbox holds work."""
        pending: Any = int | None  # the converter's type hint (mypy has no type[] of a union)
        while True:
            items, self._inbound = tuple(self._inbound), []
            woken_at: int | None = await self._act(
                "dsh.take_inbound", Intake(sid, items, running), pending, stoppable=False
            )
            if not self._inbound:
                return woken_at

    def _stopped(self) -> bool:
        """Whether a cancel came (a method: a signal can set it during any ``await``)."""
        return self._cancelled

    def _aborted(self, delegated: bool) -> Ending:
        return Ending("aborted", by="parent" if delegated else "user")

    async def _steps(self, turn_input: TurnInput, begun: TurnBegun) -> Ending:
        if workflow.patched(HOOKED_STEPS):
            return await self._planned_steps(turn_input, begun)
        return await self._legacy_steps(turn_input, begun)

    async def _legacy_steps(self, turn_input: TurnInput, begun: TurnBegun) -> Ending:
        """Frozen: the steps of a run started before :data:`HOOKED_STEPS`, as that run took
        them (a worker upgraded under it replays its history to the same commands). New runs
        never come here: their steps are :meth:`_planned_steps`, decided by the loop's plan."""
        sid, start, delegated = turn_input.session_id, turn_input.from_seq, turn_input.delegated
        woken = turn_input.prompt is None
        for step in plan.steps(begun.max_steps):
            if self._stopped():
                return self._aborted(delegated is not None)
            prompt = turn_input.prompt if step == 1 else None
            if self._inbound:  # a notice joins this step (a message for a turn of its own waits)
                await self._intake(sid, running=True)
            settled = await self._act(
                "dsh.model_step",
                StepInput(sid, start, begun.turn, step, prompt, delegated, step == 1 and woken),
                StepSettled,
            )
            if settled.failure_code is not None:
                return Ending("error", settled.failure_code, settled.failure_message)
            if settled.max_tokens:
                return Ending("max-tokens")
            if not settled.calls:
                if any(not item.next_turn for item in self._inbound):
                    continue  # a notice came during the step: it keeps the turn going, as in the loop
                return Ending("completed")
            if workflow.patched(BATCHED_CALLS):
                if await self._calls(turn_input, begun.turn, step, settled.calls) is None:
                    return self._aborted(delegated is not None)
                continue
            for call in settled.calls:
                if self._stopped():  # the cancel came as the step settled
                    return self._aborted(delegated is not None)
                await self._call(CallInput(sid, start, begun.turn, step, call.call_id, delegated), call)
        limit = plan.step_limit(begun.turn, begun.max_steps)
        return Ending("error", limit.code, limit.message)

    async def _planned_steps(self, turn_input: TurnInput, begun: TurnBegun) -> Ending:
        """The steps as the loop's :class:`~dsh.loop.plan.TurnPlan` decides them, each action an
        activity: ``dsh.model_step`` opens and settles a step (firing ``UserPromptSubmit`` before
        step 1 of a prompted turn and ``Stop`` after a step the plan sends to ``AskStop``, as
        ``dsh.loop.stepwise`` does), its calls run (``_calls``), and what their hooks or a
        ``Stop`` block give the next step is carried to it (``carried``)."""
        sid, start, delegated = turn_input.session_id, turn_input.from_seq, turn_input.delegated
        woken = turn_input.prompt is None
        turn_plan = plan.TurnPlan(begun.turn, begun.max_steps)
        action = turn_plan.start()
        carried: tuple[str, ...] = ()
        calls: tuple[Call, ...] = ()
        while not isinstance(action, plan.EndTurn):
            if isinstance(action, plan.CallModel):
                if self._stopped():
                    return self._aborted(delegated is not None)
                step = action.step
                prompt = turn_input.prompt if step == 1 else None
                if self._inbound:  # a notice joins this step (a message for a turn of its own waits)
                    await self._intake(sid, running=True)
                opening = StepInput(
                    sid, start, begun.turn, step, prompt, delegated, step == 1 and woken, carried
                )
                settled = await self._act("dsh.model_step", opening, StepSettled)
                calls, carried = settled.calls, settled.carried  # a Stop block's steer (fired by the step)
                failure = None
                if settled.failure_code is not None:
                    failure = (settled.failure_code, settled.failure_message or "")
                action = turn_plan.settled(
                    called=bool(calls), cut_off=settled.max_tokens, failure=failure, blocked=settled.blocked
                )
                if isinstance(action, plan.AskStop):  # the step's activity asked the Stop hooks
                    action = turn_plan.stopped(waiting=self._waiting(carried))
            elif isinstance(action, plan.RunCalls):
                ran = await self._calls(turn_input, begun.turn, action.step, calls, carrying=True)
                if ran is None:
                    return self._aborted(delegated is not None)
                carried = ran
                action = turn_plan.ran()
            elif not workflow.patched(PLANNED_STEPS):
                action = turn_plan.stopped(waiting=True)  # before it: a step whose calls ran went on
            else:  # AskStop after calls (an earlier step was cut off): the Stop hooks unless work waits
                if not carried:
                    stop = StopInput(sid, start, begun.turn, delegated)
                    carried = (await self._act("dsh.stop_turn", stop, Stopped)).carried
                action = turn_plan.stopped(waiting=self._waiting(carried))
        return Ending(action.kind, action.code, action.message)

    def _waiting(self, carried: tuple[str, ...]) -> bool:
        """Whether work waits for a next step: messages ``carried`` to it, or a notice that came
        during the step (a message for a turn of its own waits for that turn)."""
        return bool(carried) or any(not item.next_turn for item in self._inbound)

    async def _calls(
        self, turn_input: TurnInput, turn: int, step: int, calls: tuple[Call, ...], *, carrying: bool = False
    ) -> tuple[str, ...] | None:
        """The step's calls in model order: each run of ordinary calls by one activity (the
        loop's scheduler: hooks, concurrency-safe calls together; ``carrying``: ``dsh.step_tools``,
        which returns what their hooks give the next step, else ``dsh.tool_calls``), each
        delegation call as :meth:`_call`; the next step's messages, ``None`` when a cancel
        stopped them."""
        sid, start, delegated = turn_input.session_id, turn_input.from_seq, turn_input.delegated
        carried: tuple[str, ...] = ()
        for run in plan.call_runs(calls, lambda call: call.delegates):
            if self._stopped():  # the cancel came as the step settled, or during a call
                return None
            if run.delegates:
                (call,) = run.calls
                call_input = CallInput(sid, start, turn, step, call.call_id, delegated)
                if carrying and workflow.patched(CHILD_HOOKS):
                    carried += await self._carried_call(call_input)
                else:
                    await self._call(call_input, call)
                continue
            batch = CallsInput(sid, start, turn, step, tuple(call.call_id for call in run.calls), delegated)
            if carrying:
                carried += (await self._act("dsh.step_tools", batch, CallsRan)).carried
            else:
                await self._act("dsh.tool_calls", batch, bool)
        return carried

    async def _call(self, call_input: CallInput, call: Call) -> None:
        if call.delegates:
            child = await self._act("dsh.start_child", call_input, ChildStarted | None)  # type: ignore[arg-type]
            if child is not None and child.delegated.continuable:
                await self._background(child)
                return
            if child is not None:
                ending = await self._child(child)
                finished = ChildFinished(call_input, child.session_id, ending)
                await self._act("dsh.finish_child", finished, bool)
                return
        await self._act("dsh.tool_call", call_input, bool)

    async def _carried_call(self, call: CallInput) -> tuple[str, ...]:
        """A delegation call as :meth:`_call` runs it (:data:`CHILD_HOOKS`); what its hooks
        give the next step."""
        opening = CallInput(
            call.session_id, call.from_seq, call.turn, call.step, call.call_id, call.delegated, True
        )
        opened = await self._act("dsh.start_child", opening, ChildOpened)
        child = opened.started
        if child is None:  # a hook refused it (its result is logged) or it does not delegate
            batch = CallsInput(
                call.session_id, call.from_seq, call.turn, call.step, (call.call_id,), call.delegated
            )
            return opened.carried + (await self._act("dsh.step_tools", batch, CallsRan)).carried
        if child.delegated.continuable:
            await self._background(child)
            return opened.carried
        finished = ChildFinished(call, child.session_id, await self._child(child), carrying=True)
        return opened.carried + (await self._act("dsh.finish_child", finished, CallsRan)).carried

    async def _background(self, child: ChildStarted) -> None:
        """Start a background child's workflow and go on: it outlives this run, and its
        settlement notice wakes this session (``dsh.temporal.waking``)."""
        await workflow.start_child_workflow(
            TurnWorkflow.run,
            TurnInput(child.session_id, child.from_seq, None, child.delegated),
            id=workflow_id(child.session_id),
            parent_close_policy=workflow.ParentClosePolicy.ABANDON,
        )

    async def _child(self, child: ChildStarted) -> Ending:
        """Run the child's turn as a child workflow; a cancel of this turn cancels it."""
        handle = await workflow.start_child_workflow(
            TurnWorkflow.run,
            TurnInput(child.session_id, child.from_seq, child.prompt, child.delegated),
            id=workflow_id(child.session_id),
        )
        try:
            await workflow.wait_condition(lambda: self._cancelled or handle.done())
        except asyncio.CancelledError:  # Temporal's own cancellation of this run
            self._cancelled = True
        if not handle.done():
            handle.cancel()
        outcome = await handle
        return outcome.ending


def _turn_input(given: object) -> TurnInput:
    """``given`` (the run's input as decoded JSON) as a :class:`TurnInput`; input that is not
    one, or names no session, fails the run for good with one line (a workflow task failure
    would be retried, with a traceback, forever)."""
    try:
        turn_input = given if isinstance(given, TurnInput) else value_to_type(TurnInput, given, [])
    except (TypeError, ValueError) as exc:
        message = f"dsh-turn input is not a turn ({str(exc).splitlines()[0]}): {str(given)[:80]!r}"
        raise ApplicationError(message, type="BadTurnInput", non_retryable=True) from None
    if not turn_input.session_id:
        raise ApplicationError(
            "dsh-turn input names no session (session_id is empty)", type="BadTurnInput", non_retryable=True
        )
    return cast("TurnInput", turn_input)


def _failed(exc: BaseException) -> Ending:
    """The ending of a turn whose activity failed for good: its innermost cause, one line."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    message = str(exc).split("\n", 1)[0] or type(exc).__name__
    return Ending("error", "WORKER", message)

"""A turn driven from outside one piece at a time, each piece idempotent against the log.

An external engine (``dsh.temporal``) runs a turn as separate units of work — open the
turn, one model step, one tool call, close the turn — possibly in different processes,
each over an agent freshly attached to the stored log. Every piece first reads the log and
does only what it does not already show: a step whose settlement is logged is not asked
again, a call whose result is logged does not run again, and a call logged as started but
never settled (its runner died) gets the crash-repair result "outcome unknown" instead of
running twice (at most once). The events are the loop's own (``Steps``, ``ToolScheduler``):
a turn run this way reads like one run by :meth:`Agent.run_turn`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dsh.errors import ModelError
from dsh.events import Event
from dsh.events.chunks import Failure
from dsh.events.messages import Block, Message, joined_text, tool_result_message
from dsh.events.payloads import (
    TurnEndReason,
    assistant_blocks_of,
    step_mark,
    stream_of,
    tool_call,
    tool_result_data,
    turn_end,
    turn_end_of,
    turn_start,
)
from dsh.events.vocabulary import (
    ASSISTANT_MESSAGE,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
)
from dsh.loop import plan
from dsh.loop.inbox import claimed_turn_message
from dsh.loop.result import TurnResult
from dsh.loop.sandbox_mode import log_sandbox_mode
from dsh.loop.steps import Steps
from dsh.session import final_assistant_text, interrupted_turn_closers, usage_totals
from dsh.session.views import call_pairs, outcome_unknown
from dsh.tools import ToolOutput

if TYPE_CHECKING:
    from dsh.loop.agent import Agent


@dataclass(frozen=True, slots=True)
class CallRef:
    """One tool call of a settled step: its id and tool name."""

    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What one model step settled: its tool calls, whether it hit the token limit, or the
    failure that ends the turn; ``ran``: the model was asked now (not found in the log)."""

    calls: tuple[CallRef, ...]
    max_tokens: bool
    failure: Failure | None
    ran: bool
    blocked: bool = False
    """``UserPromptSubmit`` blocked the prompt: the turn ends ``blocked``, no step opened."""
    next_step: tuple[Message, ...] = ()
    """A ``Stop`` hook blocked the turn's end: the next step opens with these."""


@dataclass(frozen=True, slots=True)
class CallsRan:
    """What :meth:`StepwiseTurn.tool_calls` did: ``ran``, a call ran now; ``next_step``, the
    messages the calls' hooks gave the next step (in model order of their calls)."""

    ran: bool
    next_step: tuple[Message, ...] = ()


def _data(event: Event) -> dict[str, Any]:
    return event.data if isinstance(event.data, dict) else {}


def _is(event: Event, etype: str, turn: int, step: int | None = None) -> bool:
    data = _data(event)
    return event.type == etype and data.get("turn") == turn and (step is None or data.get("step") == step)


def _hit_max_tokens(event: Event) -> bool:
    record = stream_of(event)
    for chunk in reversed(record["chunks"] if record else []):
        if chunk["type"] == "finish":
            return chunk["reason"].get("kind") == "max-tokens"
    return False


def _outcome(event: Event, *, ran: bool) -> StepOutcome:
    blocks = assistant_blocks_of(event) or []
    calls = tuple(CallRef(str(b["id"]), str(b["name"])) for b in blocks if b.get("type") == "tool-call")
    max_tokens = _hit_max_tokens(event)
    return StepOutcome(() if max_tokens else calls, max_tokens, None, ran)


class StepwiseTurn:
    """The pieces of one turn over ``agent`` (``Agent.stepwise()``); ``from_seq`` is the
    session's next seq when the turn was submitted: the turn's events are the ones after it."""

    def __init__(self, agent: Agent, steps: Steps) -> None:
        self._agent = agent
        self._steps = steps
        agent.titling.defer()  # this agent lives for one piece: the title is asked at the end
        agent.digest.at_close = False  # and the listing digest kept

    def _turn_events(self, from_seq: int) -> Sequence[Event]:
        return self._agent.session.events[from_seq:]

    def turn_of(self, from_seq: int) -> int | None:
        """The number of the turn opened after ``from_seq``, if one is logged."""
        for event in self._turn_events(from_seq):
            if event.type == TURN_START:
                return int(_data(event).get("turn", 0))
        return None

    async def begin(
        self, from_seq: int, preamble: Sequence[tuple[str, dict[str, Any]]] = (), *, woken: bool = False
    ) -> int:
        """Open the turn (``turn/start``, ``preamble``, the sandbox mode) unless it is logged;
        a turn an earlier runner left open is closed first (as ``Agent.resume`` does).
        ``woken``: a turn without a prompt, which claims the inbox's first next-turn message
        right after ``turn/start``, as ``Agent.run_turn(None)`` does."""
        turn = self.turn_of(from_seq)
        if turn is not None:
            return turn
        agent = self._agent
        closers = interrupted_turn_closers(agent.session)
        for etype, data, sources in closers:
            agent.append(etype, data, source_event_seqs=sources)
        turn = agent.session.last_turn() + 1
        agent.append(TURN_START, turn_start(turn))
        if woken:
            agent.inbox.claim_turn()  # step 1 reads it back from the log
        for etype, data in preamble:
            agent.append(etype, data)
        log_sandbox_mode(agent)
        await agent.checkpoint()
        return turn

    def _close_step(self, turn: int, from_seq: int) -> None:
        """``step/end`` for the turn's step still open (its tools are done)."""
        open_step: int | None = None
        for event in self._turn_events(from_seq):
            if _is(event, STEP_START, turn):
                open_step = int(_data(event)["step"])
            elif _is(event, STEP_END, turn):
                open_step = None
        if open_step is not None:
            self._agent.append(STEP_END, step_mark(turn, open_step))

    async def model_step(
        self,
        turn: int,
        step: int,
        from_seq: int,
        prompt: Message | None,
        *,
        woken: bool = False,
        carried: Sequence[Message] = (),
    ) -> StepOutcome:
        """Step ``step``: opened (``prompt`` is step 1's message; ``woken``: the message the
        woken turn claimed at :meth:`begin`; ``carried``: what the previous step's hooks gave
        this one) and settled unless logged — with the session's hooks as ``Steps.run`` fires
        them: ``UserPromptSubmit`` before step 1 of a prompted turn (a block opens no step),
        ``Stop`` after a step without calls (its ``step/end`` first; a block's reason opens
        the next step). A step found settled in the log fires none again."""
        events = self._turn_events(from_seq)
        settled = next((e for e in events if _is(e, ASSISTANT_MESSAGE, turn, step)), None)
        if settled is not None and not _data(settled).get("interrupted"):
            return _outcome(settled, ran=False)
        hooks = await self._steps.session_hooks()
        if not any(_is(e, STEP_START, turn, step) for e in events):
            self._close_step(turn, from_seq)
            logged = self._agent.session.events
            opened = claimed_turn_message(logged, from_seq) if woken and step == 1 else prompt
            additions: list[Message] = []
            if hooks is not None and step == 1 and prompt is not None and not woken:
                submitted = await hooks.user_prompt_submit(turn, joined_text(prompt.get("content", [])))
                if submitted.blocked:
                    await self._agent.checkpoint()
                    return StepOutcome((), False, None, True, blocked=True)
                additions = list(submitted.context_messages)
            pending = [opened] if opened is not None else list(carried)
            await self._steps.open_step(turn, step, pending, additions)
        try:
            await self._steps.model_step(turn, step, resumed=False)
        except ModelError as exc:
            return StepOutcome((), False, {"code": exc.code, "message": exc.failure_message}, True)
        finally:
            await asyncio.shield(self._agent.checkpoint())
        events = self._turn_events(from_seq)
        outcome = _outcome(
            next(e for e in reversed(events) if _is(e, ASSISTANT_MESSAGE, turn, step)), ran=True
        )
        if not plan.stops_after(called=bool(outcome.calls), cut_off=outcome.max_tokens):
            return outcome
        steer = await self.stop(turn, from_seq)  # as the loop: the step ends, then Stop fires
        if not steer:
            return outcome
        return StepOutcome((), outcome.max_tokens, None, True, next_step=steer)

    async def stop(self, turn: int, from_seq: int) -> tuple[Message, ...]:
        """The plan's ``AskStop``: the open step's ``step/end``, then the session's ``Stop``
        hooks; a block's messages for the next step (none: the turn may end)."""
        self._close_step(turn, from_seq)
        hooks = await self._steps.session_hooks()
        stopping = await hooks.stop(turn) if hooks is not None else None
        await self._agent.checkpoint()
        if stopping is None or not stopping.blocked:
            return ()
        return tuple(stopping.steer_messages())

    def find_block(self, turn: int, step: int, from_seq: int, call_id: str) -> Block | None:
        """The tool-call block ``call_id`` of step ``step``'s settled message."""
        for event in self._turn_events(from_seq):
            if _is(event, ASSISTANT_MESSAGE, turn, step):
                for block in assistant_blocks_of(event) or []:
                    if block.get("type") == "tool-call" and block.get("id") == call_id:
                        return block
        return None

    async def tool_call(self, turn: int, step: int, from_seq: int, call_id: str) -> bool:
        """:meth:`tool_calls` of the one call ``call_id``; ``True`` when it ran now."""
        return (await self.tool_calls(turn, step, from_seq, [call_id])).ran

    async def tool_calls(self, turn: int, step: int, from_seq: int, call_ids: Sequence[str]) -> CallsRan:
        """Run the step's calls ``call_ids`` (in model order) as the loop runs a step's calls
        — the agent's :class:`~dsh.loop.scheduler.ToolScheduler` with the session's hooks:
        concurrency-safe neighbours together, ``PreToolUse`` / ``PostToolUse`` around each,
        results committed in model order — except those whose result is logged; a call
        logged as started without a result (its runner died) is settled "outcome unknown",
        not rerun. The hooks' messages for the next step come back (none from calls that
        settled in an earlier attempt)."""
        blocks: list[Block] = []
        for call_id in call_ids:
            started, settled = self._find_call(from_seq, call_id)
            if settled:
                continue
            if started is not None:  # a crash leaves these before the calls never started
                self._settle_unknown(turn, step, call_id, started)
                continue
            block = self.find_block(turn, step, from_seq, call_id)
            if block is None:
                raise ModelError("UNKNOWN", f"step {step} of turn {turn} has no tool call {call_id}")
            blocks.append(block)
        if not blocks:
            await self._agent.checkpoint()
            return CallsRan(False)
        reminder = self._steps.scheduler.reminder
        if reminder is not None:  # its chain of identical calls, as the live agent has it
            reminder.replay(self._agent.session.events)
        try:
            hooks = await self._steps.session_hooks()
            ran = await self._steps.scheduler.run(blocks, turn=turn, step=step, hooks=hooks)
        finally:
            await asyncio.shield(self._agent.checkpoint())
        return CallsRan(True, tuple(ran.next_step))

    def _find_call(self, from_seq: int, call_id: str) -> tuple[Event | None, bool]:
        """The call's ``tool/call`` event, and whether its result is logged."""
        pairs = call_pairs(self._turn_events(from_seq))
        return pairs.started.get(call_id), call_id in pairs.settled

    async def start_call(
        self, turn: int, step: int, from_seq: int, call_id: str, *, context: list[Message] | None = None
    ) -> Block | None:
        """For a call run elsewhere (a child workflow): its ``tool/call`` logged unless it is,
        then the session's ``PreToolUse`` hooks as the scheduler fires them (a block or a
        refused ask settles the call; what they give the next step is added to ``context``);
        the call's block, ``None`` when its result is logged."""
        started, settled = self._find_call(from_seq, call_id)
        if settled:
            return None
        block = self.find_block(turn, step, from_seq, call_id)
        if block is None:
            raise ModelError("UNKNOWN", f"step {step} of turn {turn} has no tool call {call_id}")
        if started is not None:
            return block
        data = tool_call(turn, step, call_id, str(block["name"]), str(block.get("arguments", "")))
        seq = self._agent.append(TOOL_CALL, data).seq
        await self._agent.checkpoint()
        scheduler = self._steps.scheduler
        hooks = scheduler.hooked(await self._steps.session_hooks(), block)
        if hooks is None:
            return block
        refused, messages = await scheduler.before(hooks, block, turn=turn, step=step)
        if context is not None:
            context.extend(messages)
        if refused is not None:
            self._commit(turn, step, call_id, seq, refused)
        await self._agent.checkpoint()
        return block if refused is None else None

    async def settle_call(
        self,
        turn: int,
        step: int,
        from_seq: int,
        call_id: str,
        out: ToolOutput,
        *,
        context: list[Message] | None = None,
    ) -> None:
        """The result of a call :meth:`start_call` started, unless one is logged — after the
        session's ``PostToolUse`` hooks (a block's text instead; what they give the next step
        is added to ``context``)."""
        started, settled = self._find_call(from_seq, call_id)
        block = self.find_block(turn, step, from_seq, call_id)
        if settled or started is None or block is None:
            return
        scheduler = self._steps.scheduler
        hooks = scheduler.hooked(await self._steps.session_hooks(), block)
        if hooks is not None:
            out, messages = await scheduler.after(hooks, block, out, turn=turn)
            if context is not None:
                context.extend(messages)
        self._commit(turn, step, call_id, started.seq, out)
        await self._agent.checkpoint()

    def _commit(self, turn: int, step: int, call_id: str, call_seq: int, out: ToolOutput) -> None:
        message = tool_result_message(call_id, out.content, is_error=out.is_error)
        data = tool_result_data(
            turn, step, message, error_code=out.code if out.is_error else None, meta=out.meta
        )
        self._agent.append(TOOL_RESULT, data, source_event_seqs=[call_seq])

    def _settle_unknown(self, turn: int, step: int, call_id: str, started: Event) -> None:
        data = outcome_unknown(turn, step, call_id, "the worker running it was lost")
        self._agent.append(TOOL_RESULT, data, source_event_seqs=[started.seq])

    async def end(self, turn: int, from_seq: int, reason: TurnEndReason) -> TurnResult:
        """Close the open step and the turn (``turn/end {reason}``) unless logged; its result."""
        events = self._turn_events(from_seq)
        ended = next((e for e in events if _is(e, TURN_END, turn)), None)
        if ended is None:
            self._close_step(turn, from_seq)
            ended = self._agent.append(TURN_END, turn_end(turn, reason))
            await asyncio.shield(self._agent.checkpoint())
        await self._agent.titling.after_logged_request()  # a retried end asks only if still unanswered
        await self._agent.digest.keep()
        logged = turn_end_of(ended)
        own = self._turn_events(from_seq)
        return TurnResult(
            self._agent.id,
            turn,
            logged["reason"] if logged else reason,
            final_assistant_text(own),
            usage_totals(own),
        )

"""Tool-call scheduling within one step: a bounded pool, barriers, hooks, results in model order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from dsh.events import Event
from dsh.events.messages import Block, Message, joined_text, tool_result_message
from dsh.events.payloads import tool_call, tool_result_data
from dsh.events.vocabulary import TOOL_CALL, TOOL_RESULT
from dsh.hooks import SessionHooks, approval_refusal
from dsh.jsonx import JSONDecodeError, loads
from dsh.loop.persist import Persister
from dsh.loop.repeat_reminder import RepeatReminder
from dsh.tools import ToolContext, ToolOutput
from dsh.tools.registry import PreparedCall, ToolRegistry
from dsh.tools.served import RecordedResults, reruns_in_replay

Append = Callable[..., Event]

ABORTED = ToolOutput.error("tool call aborted", "ABORTED")
ABORTED_BEFORE_DISPATCH = ToolOutput.error("tool call aborted before dispatch", "ABORTED_BEFORE_DISPATCH")


@dataclass(slots=True)
class StepTools:
    """What one step's tool calls produced: results in model order, and the messages hooks
    asked to show the model at the start of the next step (in model order of their calls)."""

    outputs: list[ToolOutput] = field(default_factory=list)
    next_step: list[Message] = field(default_factory=list)


def tool_input(raw_arguments: str) -> object:
    """The call's arguments as a hook sees them: parsed JSON, ``{}`` when blank, else the raw text."""
    if not raw_arguments.strip():
        return {}
    try:
        return loads(raw_arguments)
    except JSONDecodeError:
        return raw_arguments


def _result_text(out: ToolOutput) -> str:
    return joined_text(out.content)


def _groups(prepared: list[PreparedCall | ToolOutput]) -> list[list[int]]:
    """Split calls into runs: consecutive concurrency-safe calls share a run; others alone."""
    groups: list[list[int]] = []
    run: list[int] = []
    for i, p in enumerate(prepared):
        safe = isinstance(p, ToolOutput) or p.concurrency_safe
        if safe:
            run.append(i)
            continue
        if run:
            groups.append(run)
            run = []
        groups.append([i])
    if run:
        groups.append(run)
    return groups


class ToolScheduler:
    """Runs one assistant message's tool calls.

    ``tool/call`` is appended when a call starts (after a durable checkpoint), results are
    committed in model order, concurrency-safe neighbours overlap in a pool of at most
    ``max_parallel``. On cancellation nothing new starts; started calls get their real
    result or ``Error: tool call aborted``, calls never started get
    ``ABORTED_BEFORE_DISPATCH``; every ``tool/call`` gets exactly one ``tool/result``.

    With ``hooks``, a call of a registered tool first fires ``PreToolUse`` (a deny, or an ask
    the session's approvals did not allow, answers instead of the tool; the arguments are
    validated after it, as in the original), and its result fires ``PostToolUse`` (a block
    replaces the result).
    Hook rows sit between the call's ``tool/call`` and ``tool/result``.
    """

    def __init__(
        self,
        *,
        registry: ToolRegistry,
        persister: Persister,
        append: Append,
        make_context: Callable[[str, int, int], ToolContext],
        max_parallel: int = 10,
        reminder: RepeatReminder | None = None,
        recorded: RecordedResults | None = None,
    ) -> None:
        self._recorded = recorded
        self.reminder = reminder
        """The agent's repeat-tool reminder (``None``: off); the steps tell it what they claim."""
        self._registry = registry
        self._persister = persister
        self._append = append
        self._make_context = make_context
        self._max_parallel = max(1, max_parallel)

    async def _approve(self, name: str, call_id: str, reason: str | None, turn: int, step: int) -> str:
        """A hook's ``ask``, through the session's approvals (none composed: ``unavailable``)."""
        approvals = self._make_context(call_id, turn, step).approvals
        if approvals is None:
            return "unavailable"
        return await approvals.request(name, call_id, reason, scope=f"tool:{name}")

    async def before(
        self, hooks: SessionHooks, call: Block, *, turn: int, step: int
    ) -> tuple[ToolOutput | None, list[Message]]:
        """``PreToolUse`` for ``call`` (an ask goes through the session's approvals): the answer
        that stands for the tool when it may not run (``None``: it may), and the context the
        hooks gave the next step."""
        name, call_id = str(call["name"]), str(call["id"])
        pre = await hooks.pre_tool_use(turn, name, tool_input(str(call.get("arguments", ""))), call_id)
        context = list(pre.context_messages)
        if pre.blocked:
            return pre.denied_result(), context
        if pre.asked:
            outcome = await self._approve(name, call_id, pre.reason, turn, step)
            if outcome != "allowed-once":
                return approval_refusal(name, outcome), context
        return None, context

    async def after(
        self, hooks: SessionHooks, call: Block, out: ToolOutput, *, turn: int
    ) -> tuple[ToolOutput, list[Message]]:
        """``PostToolUse`` for ``call``'s result ``out``: the result to commit (a block's text
        instead), and the context the hooks gave the next step."""
        name, call_id = str(call["name"]), str(call["id"])
        args = tool_input(str(call.get("arguments", "")))
        post = await hooks.post_tool_use(turn, name, args, call_id, _result_text(out))
        return (post.blocked_result() if post.blocked else out), list(post.context_messages)

    def hooked(self, hooks: SessionHooks | None, call: Block) -> SessionHooks | None:
        """``hooks`` when they fire around ``call`` (a call of a registered tool), else ``None``."""
        return hooks if hooks is not None and str(call["name"]) in self._registry else None

    async def run(
        self, calls: list[Block], *, turn: int, step: int, hooks: SessionHooks | None = None
    ) -> StepTools:
        prepared = [self._registry.prepare(str(c["name"]), str(c.get("arguments", ""))) for c in calls]
        n = len(calls)
        results: list[ToolOutput | None] = [None] * n
        injected: list[list[Message]] = [[] for _ in range(n)]  # PreToolUse context, then the rest
        post_at: list[int | None] = [
            None
        ] * n  # where the PostToolUse context starts: a reminder goes before it
        call_seqs: list[int | None] = [None] * n
        committed = 0
        sem = asyncio.Semaphore(self._max_parallel)

        def log_call(i: int) -> None:
            c = calls[i]
            event = self._append(TOOL_CALL, tool_call(turn, step, c["id"], c["name"], c.get("arguments", "")))
            call_seqs[i] = event.seq

        def commit(i: int, out: ToolOutput) -> None:
            seq = call_seqs[i]
            assert seq is not None
            call_id = str(calls[i]["id"])
            message = tool_result_message(call_id, out.content, is_error=out.is_error)
            data = tool_result_data(
                turn, step, message, error_code=out.code if out.is_error else None, meta=out.meta
            )
            self._append(TOOL_RESULT, data, source_event_seqs=[seq])
            if self.reminder is not None:
                notice = self.reminder.observe(str(calls[i]["name"]), str(calls[i].get("arguments", "")))
                if notice is not None:
                    at = post_at[i]
                    injected[i].insert(len(injected[i]) if at is None else at, notice)

        async def execute(i: int) -> ToolOutput:
            p = prepared[i]
            if isinstance(p, ToolOutput):
                return p
            ctx = self._make_context(str(calls[i]["id"]), turn, step)
            if self._recorded is not None and not reruns_in_replay(p.tool):
                arguments = str(calls[i].get("arguments", ""))
                return self._recorded.recorded_result(ctx.session_id, ctx.call_id, p.name, arguments)
            return await self._registry.run(p, ctx)

        async def hooked(i: int, hooks: SessionHooks) -> ToolOutput:
            refused, context = await self.before(hooks, calls[i], turn=turn, step=step)
            injected[i].extend(context)
            if refused is not None:
                return refused
            out = await execute(i)
            post_at[i] = len(injected[i])
            out, context = await self.after(hooks, calls[i], out, turn=turn)
            injected[i].extend(context)
            return out

        async def run_one(i: int) -> None:
            async with sem:
                log_call(i)
                await self._persister.flush()
                around = self.hooked(hooks, calls[i])
                results[i] = await (hooked(i, around) if around is not None else execute(i))

        try:
            for group in _groups(prepared):
                async with asyncio.TaskGroup() as tg:
                    tasks = [tg.create_task(run_one(i)) for i in group]
                    for i, task in zip(group, tasks, strict=True):
                        await task
                        out = results[i]
                        assert out is not None
                        commit(i, out)
                        committed = i + 1
        except asyncio.CancelledError:
            for i in range(committed, n):
                if call_seqs[i] is None:
                    log_call(i)
                    out = ABORTED_BEFORE_DISPATCH
                else:
                    out = results[i] or ABORTED
                results[i] = out
                commit(i, out)
            raise
        return StepTools([r for r in results if r is not None], [m for ms in injected for m in ms])

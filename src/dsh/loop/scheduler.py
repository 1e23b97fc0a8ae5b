"""Tool-call scheduling within one step: a bounded pool, barriers, results in model order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from dsh.events import Event
from dsh.events.messages import Block, tool_result_message
from dsh.events.vocabulary import TOOL_CALL, TOOL_RESULT
from dsh.loop.persist import Persister
from dsh.tools import ToolContext, ToolOutput
from dsh.tools.registry import PreparedCall, ToolRegistry

Append = Callable[..., Event]

ABORTED = ToolOutput.error("tool call aborted", "ABORTED")
ABORTED_BEFORE_DISPATCH = ToolOutput.error("tool call aborted before dispatch", "ABORTED_BEFORE_DISPATCH")


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
    """

    def __init__(
        self,
        *,
        registry: ToolRegistry,
        persister: Persister,
        append: Append,
        make_context: Callable[[str, int, int], ToolContext],
        max_parallel: int = 10,
    ) -> None:
        self._registry = registry
        self._persister = persister
        self._append = append
        self._make_context = make_context
        self._max_parallel = max(1, max_parallel)

    async def run(self, calls: list[Block], *, turn: int, step: int) -> list[ToolOutput]:
        prepared = [self._registry.prepare(str(c["name"]), str(c.get("arguments", ""))) for c in calls]
        n = len(calls)
        results: list[ToolOutput | None] = [None] * n
        call_seqs: list[int | None] = [None] * n
        committed = 0
        sem = asyncio.Semaphore(self._max_parallel)

        def log_call(i: int) -> None:
            c = calls[i]
            event = self._append(
                TOOL_CALL,
                {
                    "turn": turn,
                    "step": step,
                    "callId": c["id"],
                    "name": c["name"],
                    "arguments": c.get("arguments", ""),
                },
            )
            call_seqs[i] = event.seq

        def commit(i: int, out: ToolOutput) -> None:
            seq = call_seqs[i]
            assert seq is not None
            call_id = str(calls[i]["id"])
            data: dict[str, Any] = {
                "turn": turn,
                "step": step,
                "message": tool_result_message(call_id, out.content, is_error=out.is_error),
            }
            if out.is_error and out.code:
                data["error"] = {"code": out.code}
            if out.meta is not None:
                data["meta"] = out.meta
            self._append(TOOL_RESULT, data, source_event_seqs=[seq])

        async def run_one(i: int) -> None:
            async with sem:
                log_call(i)
                await self._persister.flush()
                p = prepared[i]
                if isinstance(p, ToolOutput):
                    results[i] = p
                else:
                    ctx = self._make_context(str(calls[i]["id"]), turn, step)
                    results[i] = await self._registry.run(p, ctx)

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
        return [r for r in results if r is not None]

"""Tokens per request over a long session, with and without compaction, and the prefix the
summary request shares with the conversation request before it.

A scripted model (no network) answers every turn with ~90 words and every summary request
with a short checkpoint; each turn's prompt is ~60 words. The same conversation runs twice:
with ``CompactionPolicy(context_window=WINDOW)`` and with compaction off. Tokens are the
original's heuristic estimator over what the request carries (system prompt, tool schemas,
messages). Prefix reuse: for each summary request, how much of it (by the same estimate) is
byte-identical to the start of the last conversation request — what a provider's prompt
cache can serve.

Run: ``python bench/compaction_tokens.py [TURNS] [WINDOW]`` (default 300 turns, 16,000 tokens).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from dsh.events.tokens import header_price, message_price
from dsh.loop import NO_DELAY, Agent, AgentConfig, CompactionPolicy
from dsh.model.base import ModelRequest
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.store.memory import MemoryEventStore
from dsh.tools.registry import builtin_registry


def _reply(request: ModelRequest, index: int) -> Any:
    last = request.messages[-1] if request.messages else {}
    if last.get("source", {}).get("plugin") == "dsh-compaction-basic":
        return text_reply("## Current Work\n- a long conversation about the story, condensed")
    return text_reply(f"Answer {index}: " + "the story goes on and on " * 18)


def _weight(request: ModelRequest) -> int:
    head = header_price({"system": request.system or "", "tools": list(request.tools)})
    return head + sum(message_price(m) for m in request.messages)


def _shared_prefix(summary: ModelRequest, before: ModelRequest) -> int:
    """Tokens of ``summary`` equal, from the start, to ``before`` (head, then messages)."""
    if (summary.system, json.dumps(list(summary.tools))) != (before.system, json.dumps(list(before.tools))):
        return 0
    shared = header_price({"system": summary.system or "", "tools": list(summary.tools)})
    for mine, theirs in zip(summary.messages, before.messages, strict=False):
        if json.dumps(mine, sort_keys=True) != json.dumps(theirs, sort_keys=True):
            break
        shared += message_price(mine)
    return shared


async def _run(turns: int, policy: CompactionPolicy) -> tuple[list[int], list[tuple[int, int]], int]:
    model = ScriptedModel(_reply)
    config = AgentConfig(model="bench-model", retry=NO_DELAY, compaction=policy)
    with tempfile.TemporaryDirectory() as cwd:
        agent = await Agent.create(
            MemoryEventStore(), model=model, tools=builtin_registry(), config=config, cwd=Path(cwd)
        )
        for turn in range(turns):
            await agent.run_turn(f"Turn {turn}: tell me more about the story, " + "and then some more " * 10)
        compactions = sum(1 for e in agent.session.events if e.type == "compaction/summary")
        await agent.aclose()
    weights, reuse = [], []
    for i, request in enumerate(model.requests):
        last = request.messages[-1] if request.messages else {}
        if last.get("source", {}).get("plugin") == "dsh-compaction-basic":
            reuse.append((_shared_prefix(request, model.requests[i - 1]), _weight(request)))
        else:
            weights.append(_weight(request))
    return weights, reuse, compactions


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    window = int(sys.argv[2]) if len(sys.argv) > 2 else 16_000
    on, reuse, count = asyncio.run(_run(turns, CompactionPolicy(context_window=window)))
    off, _, _ = asyncio.run(_run(turns, CompactionPolicy(auto=False)))
    print(f"{turns} turns, window {window:,} tokens; {count} compactions")
    print("turn   tokens/request with   without")
    for at in sorted({1, turns // 6, turns // 3, turns // 2, 2 * turns // 3, turns}):
        print(f"{at:>4}   {on[at - 1]:>20,}   {off[at - 1]:>7,}")
    print(f"max    {max(on):>20,}   {max(off):>7,}")
    print(f"median {statistics.median(on):>20,.0f}   {statistics.median(off):>7,.0f}")
    if reuse:
        shares = [shared / whole for shared, whole in reuse]
        print(
            f"summary requests: {len(reuse)}; prefix shared with the conversation request before: "
            f"median {statistics.median(shares):.1%} (min {min(shares):.1%}) of the summary request's tokens"
        )


if __name__ == "__main__":
    main()

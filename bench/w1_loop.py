"""W1-loop — the W1 conversation driven through the real agent loop (``Agent.run_turn``).

A lean scripted model serves each turn's 40 deltas (pre-built chunk dicts, as an adapter
yields them); the agent has the built-in tools registered (so every request carries their
specs) and writes to a real store. Measured side by side with the store-only W1 append of
the same backend, interleaved round by round.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Conversation, Stat, conversation, growth, now
from bench.dsh_store import DshStore, open_store
from bench.workload import MODEL, LeanModel, all_reply_chunks
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.tools.builtin import builtin_tools
from dsh.tools.registry import ToolRegistry


async def drive(kind: str, root: Path, conv: Conversation) -> list[float]:
    """Run every turn through ``Agent.run_turn``; seconds per turn."""
    root.mkdir(parents=True, exist_ok=True)
    store = open_store(kind, root)
    model = LeanModel(all_reply_chunks(conv))
    agent = await Agent.create(
        store,
        model=model,
        tools=ToolRegistry(builtin_tools()),
        config=AgentConfig(model=MODEL, retry=NO_DELAY),
        cwd=root,
    )
    per_turn: list[float] = []
    for i in range(conv.turns):
        t0 = now()
        result = await agent.run_turn(conv.users[i])
        per_turn.append(now() - t0)
        if not result.ok:  # pragma: no cover - a broken bench, not a figure
            raise RuntimeError(f"turn {i + 1} ended {result.reason}")
    await store.close()
    return per_turn


@dataclass(slots=True)
class LoopFigures:
    kind: str
    turns: int
    loop: Stat = field(default_factory=Stat)
    growth: Stat = field(default_factory=Stat)
    store_only: Stat = field(default_factory=Stat)
    last_turn_ms: Stat = field(default_factory=Stat)

    @property
    def ratio(self) -> float:
        return self.loop.median / self.store_only.median

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "loop_append_s": self.loop.to_json(),
            "growth": self.growth.to_json(),
            "store_only_append_s": self.store_only.to_json(),
            "last10pct_per_turn_s": self.last_turn_ms.to_json(),
            "ratio_loop_to_store_only": self.ratio,
        }


def run_w1_loop(
    sizes: list[int], rounds: int, workdir: Path, progress: Callable[[str], None]
) -> dict[int, dict[str, LoopFigures]]:
    out: dict[int, dict[str, LoopFigures]] = {}
    for turns in sizes:
        conv = conversation(turns)
        figs = {k: LoopFigures(k, turns) for k in ("sqlite", "jsonl")}
        out[turns] = figs
        for r in range(rounds):
            for kind in ("sqlite", "jsonl") if r % 2 == 0 else ("jsonl", "sqlite"):
                progress(f"W1-loop T={turns} round {r + 1}/{rounds}: dsh {kind}")
                root = Path(tempfile.mkdtemp(prefix=f"loop-{kind}-", dir=workdir))
                try:
                    per_turn = asyncio.run(drive(kind, root / "loop", conv))
                    store_only = DshStore(kind).run(root / "store", conv)
                finally:
                    shutil.rmtree(root, ignore_errors=True)
                f = figs[kind]
                f.loop.add(sum(per_turn))
                f.growth.add(growth(per_turn))
                n = max(1, turns // 10)
                f.last_turn_ms.add(sum(per_turn[-n:]) / n)
                f.store_only.add(sum(store_only.per_turn))
    return out

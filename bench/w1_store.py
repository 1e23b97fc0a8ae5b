"""W1 — a long conversation through each system's store: append, cold load, fork, size."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.anchors.agents_sdk import AgentsSdkSession
from bench.anchors.floors import AsyncJsonlFloor, JsonlFloor, SqliteFloor
from bench.anchors.langgraph_saver import LangGraphSaver
from bench.common import Conversation, Stat, conversation, fresh_process, growth
from bench.dsh_store import DshStore
from bench.w1_types import W1Run


class System(Protocol):
    key: str
    label: str

    def run(self, root: Path, conv: Conversation) -> W1Run: ...


@dataclass(frozen=True, slots=True)
class Entry:
    system: System
    loader: str
    """``module:function`` the fresh cold-load process calls."""
    once_above: int | None = None
    """Above this T, run once (not once per round): LangGraph's quadratic store is slow."""


def entries() -> list[Entry]:
    return [
        Entry(DshStore("sqlite"), "bench.dsh_store:load_sqlite"),
        Entry(DshStore("jsonl"), "bench.dsh_store:load_jsonl"),
        Entry(DshStore("jsonl-zstd"), "bench.dsh_store:load_jsonl_zstd"),
        Entry(JsonlFloor(deltas=True), "bench.anchors.floors:load_jsonl"),
        Entry(AsyncJsonlFloor(), "bench.anchors.floors:load_jsonl"),
        Entry(JsonlFloor(deltas=False), "bench.anchors.floors:load_jsonl"),
        Entry(SqliteFloor(), "bench.anchors.floors:load_sqlite"),
        Entry(AgentsSdkSession(), "bench.anchors.agents_sdk:load"),
        Entry(LangGraphSaver(), "bench.anchors.langgraph_saver:load", once_above=200),
    ]


@dataclass(slots=True)
class Figures:
    """Every W1 figure of one system at one T."""

    key: str
    label: str
    turns: int
    append: Stat = field(default_factory=Stat)
    growth: Stat = field(default_factory=Stat)
    load: Stat = field(default_factory=Stat)
    fork: Stat = field(default_factory=Stat)
    fork_bytes: Stat = field(default_factory=Stat)
    size: Stat = field(default_factory=Stat)
    records: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "turns": self.turns,
            "append_s": self.append.to_json(),
            "growth": self.growth.to_json(),
            "cold_load_s": self.load.to_json(),
            "fork_s": self.fork.to_json(),
            "fork_bytes": self.fork_bytes.to_json(),
            "size_bytes": self.size.to_json(),
            "records_loaded": self.records,
            "notes": self.notes,
        }


def measure_once(entry: Entry, conv: Conversation, figures: Figures, workdir: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix=f"{entry.system.key}-", dir=workdir))
    try:
        result = entry.system.run(root, conv)
        figures.append.add(sum(result.per_turn))
        figures.growth.add(growth(result.per_turn))
        figures.fork.add(result.fork_s)
        figures.fork_bytes.add(float(result.fork_bytes))
        figures.size.add(float(result.size))
        loaded = fresh_process("coldload", entry.loader, str(root))
        figures.load.add(loaded["seconds"])
        figures.records = int(loaded["records"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_w1(
    sizes: list[int],
    rounds: int,
    workdir: Path,
    progress: Callable[[str], None],
    only: set[str] | None = None,
) -> dict[int, dict[str, Figures]]:
    """Every system at every T, ``rounds`` interleaved rounds (order rotated each round)."""
    out: dict[int, dict[str, Figures]] = {}
    all_entries = [e for e in entries() if only is None or e.system.key in only]
    for turns in sizes:
        conv = conversation(turns)
        figs = {e.system.key: Figures(e.system.key, e.system.label, turns) for e in all_entries}
        out[turns] = figs
        for r in range(rounds):
            order = all_entries[r % len(all_entries) :] + all_entries[: r % len(all_entries)]
            for entry in order:
                if entry.once_above is not None and turns > entry.once_above and r > 0:
                    continue
                progress(f"W1 T={turns} round {r + 1}/{rounds}: {entry.system.key}")
                measure_once(entry, conv, figs[entry.system.key], workdir)
        for entry in all_entries:
            if entry.once_above is not None and turns > entry.once_above and rounds > 1:
                figs[entry.system.key].notes.append(f"measured once at T={turns} (slow: quadratic store)")
    return out

"""Shared pieces of the suite: the W1 conversation, timing, statistics, fresh processes, tables."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
"""The repository root (``bench/..``)."""

FIXTURES = REPO.parent / "shared" / "fixtures" / "dsh-upstream"
"""The original's recorded version-0 logs (``../shared/fixtures/dsh-upstream``)."""

USER_CHARS = 200
DELTAS = 40
DELTA_CHARS = 8

_TEXT = (
    "the session log keeps every delta of the stream so a replay is exact and a fork child "
    "inherits the completed turns of its parent while the store stays append only durable and "
    "small enough to read back quickly after a crash or a restart of the agent harness"
)
_WORDS = _TEXT.split(" ")


@dataclass(frozen=True, slots=True)
class Conversation:
    """The W1 conversation: per turn a ~200-char user message and a reply in 40 ~8-char deltas."""

    users: list[str]
    deltas: list[list[str]]
    gaps: list[list[int]]
    """Per turn, the milliseconds between consecutive stream chunks (the timed stream)."""

    @property
    def turns(self) -> int:
        return len(self.users)

    def reply(self, turn: int) -> str:
        return "".join(self.deltas[turn])


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)[:size]


def conversation(turns: int, seed: int = 7) -> Conversation:
    """A deterministic W1 conversation of ``turns`` turns."""
    rng = random.Random(seed)
    users = [f"[{i}] " + _text(rng, USER_CHARS - len(f"[{i}] ")) for i in range(turns)]
    deltas = []
    for _ in range(turns):
        text = _text(rng, DELTAS * DELTA_CHARS)
        deltas.append([text[k * DELTA_CHARS : (k + 1) * DELTA_CHARS] for k in range(DELTAS)])
    # A reply's chunks: block-start, 40 deltas, block-end, usage, finish → 43 gaps.
    gaps = [[rng.randint(5, 40) for _ in range(DELTAS + 3)] for _ in range(turns)]
    return Conversation(users, deltas, gaps)


# -- timing and statistics ---------------------------------------------------------------


def now() -> float:
    return time.perf_counter()


@dataclass(slots=True)
class Stat:
    """Several measurements of one figure: median, min and max."""

    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    @property
    def lo(self) -> float:
        return min(self.values) if self.values else float("nan")

    @property
    def hi(self) -> float:
        return max(self.values) if self.values else float("nan")

    def to_json(self) -> dict[str, Any]:
        return {"median": self.median, "min": self.lo, "max": self.hi, "runs": list(self.values)}


def growth(per_turn: Sequence[float]) -> float:
    """Per-turn cost of the last 10% of turns ÷ the first 10% (medians of each decile)."""
    n = max(1, len(per_turn) // 10)
    first = statistics.median(per_turn[:n])
    last = statistics.median(per_turn[-n:])
    return last / first if first > 0 else float("nan")


def dir_size(path: Path) -> int:
    """Bytes of every file under ``path`` (a file's own size when ``path`` is a file)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += (Path(root) / name).stat().st_size
    return total


def fresh_process(module: str, *args: str, timeout: float = 600) -> dict[str, Any]:
    """Run ``python -m bench.<module> ARGS`` in a new interpreter; return the JSON it prints last."""
    proc = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bench.{module} {' '.join(args)} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = now()
    result = fn()
    return now() - start, result


# -- output -------------------------------------------------------------------------------


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


BENCH_DISTS = (
    "dsh",
    "orjson",
    "openai",
    "langgraph",
    "langgraph-checkpoint-sqlite",
    "openai-agents",
    "vcrpy",
)


def machine() -> dict[str, Any]:
    import sqlite3

    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "packages": {d: version(d) for d in BENCH_DISTS},
    }


def machine_line(info: dict[str, Any]) -> str:
    pkgs = " ".join(f"{k}={v}" for k, v in info["packages"].items())
    return (
        f"machine: {info['cores']} cores, {info['implementation']} {info['python']}, "
        f"SQLite {info['sqlite']}, {info['platform']}\npackages: {pkgs}"
    )


def fmt_range(stat: Stat, unit: str) -> str:
    """``median (min–max)`` in ``unit`` (``s``, ``ms``, ``us``, ``x``, ``MB``)."""
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6, "x": 1.0, "MB": 1e-6, "KB": 1e-3, "B": 1.0, "k/s": 1e-3}[unit]
    if not stat.values:
        return "—"
    med = stat.median * scale
    lo, hi = stat.lo * scale, stat.hi * scale

    def f(v: float) -> str:
        if v != v:  # NaN
            return "n/a"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.3f}"

    if len(stat.values) == 1 or lo == hi:
        return f"{f(med)} {unit}"
    return f"{f(med)} {unit} ({f(lo)}–{f(hi)})"


def fmt_ratio(value: float) -> str:
    if value != value:
        return "n/a"
    if value >= 100:
        return f"{value:,.0f}×"
    if value >= 10:
        return f"{value:.1f}×"
    return f"{value:.2f}×"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A plain Markdown table (readable in a terminal, pastable into a note)."""
    rows = [list(r) for r in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(cells)) + " |"

    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("met" if ok else "MISSED")

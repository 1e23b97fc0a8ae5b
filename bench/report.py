"""Tables and the target check of bench/README.md, from the figures the workloads produced."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.common import Stat, fmt_range, table, verdict
from bench.dsh_store import NAMES
from bench.w1_loop import LoopFigures
from bench.w1_store import Figures
from bench.w2_replay import W2Figures
from bench.w3_suite import W3Figures

DSH = tuple(f"dsh-{kind}" for kind in NAMES)
FLOOR_OF = {"dsh-sqlite": "sqlite-rows", "dsh-jsonl": "jsonl-deltas", "dsh-jsonl-zstd": "jsonl-deltas"}
ABS_APPEND = {"dsh-sqlite": 1.0, "dsh-jsonl": 0.8, "dsh-jsonl-zstd": 0.8}
"""The absolute append targets at T = 2000 (seconds)."""
ANCHOR_DELTA_LOAD = 0.084
ANCHOR_FLOOR_FORK = {"dsh-sqlite": 0.066, "dsh-jsonl": 0.015, "dsh-jsonl-zstd": 0.015}
SIZE_JUDGED_ON = {"dsh-jsonl": "dsh-jsonl-zstd"}
"""The JSONL store's "≥ 1,000× smaller than LangGraph" is judged on its zstd mode when that ran
(the plain store's figure is still printed, without a verdict)."""


def compare(dsh: float, other: float, faster: str = "faster", slower: str = "slower") -> str:
    """``N× faster`` / ``N× slower`` (or smaller/larger) of dsh against ``other``."""
    if not (dsh > 0 and other > 0):
        return "n/a"
    r = other / dsh
    if r >= 1:
        return f"{_num(r)}× {faster}"
    return f"{_num(1 / r)}× {slower}"


def _num(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def w1_table(figs: dict[str, Figures]) -> str:
    rows = []
    for f in figs.values():
        rows.append(
            [
                f.label,
                fmt_range(f.append, "s"),
                fmt_range(f.growth, "x").replace(" x", "×"),
                fmt_range(f.load, "ms"),
                fmt_range(f.fork, "ms"),
                fmt_range(f.fork_bytes, "MB"),
                fmt_range(f.size, "MB"),
            ]
        )
    headers = ["system", "append total", "growth", "cold load", "fork at T/2", "fork adds", "on disk"]
    return table(headers, rows)


def w1_ratio_table(figs: dict[str, Figures]) -> str:
    rows = []
    for key in DSH:
        if key not in figs:
            continue
        d = figs[key]
        for other in figs.values():
            if other.key == key:
                continue
            rows.append(
                [
                    f"{d.label.split(' (')[0]} vs {other.label.split(' (')[0]}",
                    compare(d.append.median, other.append.median),
                    compare(d.load.median, other.load.median),
                    compare(d.fork.median, other.fork.median),
                    compare(d.size.median, other.size.median, "smaller", "larger"),
                ]
            )
    return table(["dsh vs", "append", "cold load", "fork", "on disk"], rows)


def loop_table(figs: dict[str, LoopFigures]) -> str:
    rows = []
    for f in figs.values():
        rows.append(
            [
                f"dsh {f.kind} through Agent.run_turn",
                fmt_range(f.loop, "s"),
                fmt_range(f.growth, "x").replace(" x", "×"),
                fmt_range(f.last_turn_ms, "ms"),
                fmt_range(f.store_only, "s"),
                f"{f.ratio:.2f}×",
            ]
        )
    headers = ["system", "loop append total", "growth", "per turn (last 10%)", "store-only", "loop ÷ store"]
    return table(headers, rows)


def w2_table(f: W2Figures) -> str:
    rows = [
        [
            "dsh ReplayModel through the loop (read + derive + N turns, memory store)",
            fmt_range(f.dsh_per_call, "ms"),
            fmt_range(f.dsh_open, "ms"),
            "exact chunks, timed; every call checked",
        ],
        [
            "  the same with the divergence check off",
            fmt_range(f.dsh_unchecked_per_call, "ms"),
            "",
            "",
        ],
        [
            "  of which the loop alone",
            fmt_range(f.dsh_loop_per_call, "ms"),
            "",
            "",
        ],
        [
            "  the same into a durable SQLite store (2 commits per call)",
            fmt_range(f.dsh_sqlite_per_call, "ms"),
            "",
            "",
        ],
        [
            "VCR.py replaying the openai SDK's streamed calls",
            fmt_range(f.vcr_per_call, "ms") if f.vcr_error is None else f.vcr_error,
            fmt_range(f.vcr_open, "ms"),
            "one block per stream",
        ],
        ["floor: pre-built chunk lists in memory", fmt_range(f.floor_per_call, "ms"), "", ""],
    ]
    out = table(["system", "per replayed call", "open", "stream fidelity"], rows)
    if f.vcr_error is None:
        out += (
            f"\nratios: dsh {compare(f.dsh_per_call.median, f.vcr_per_call.median)} than VCR.py per call; "
            f"dsh costs {f.dsh_per_call.median / f.floor_per_call.median:.0f}× the in-memory floor "
            f"({f.calls} calls × {f.chunks_per_call:.0f} chunks)"
        )
    return out


def w3_table(f: W3Figures) -> str:
    rows = [
        [f"{f.scenarios} bundled scenarios, run_scenario(replay), one process", fmt_range(f.suite, "s")],
        ["the same through pytest in a fresh process (wall)", fmt_range(f.pytest_wall, "s")],
        [
            f"v0 decode: {f.logs} logs, {f.lines} lines → {f.events} events (decode_log)",
            fmt_range(f.decode_eps, "k/s").replace("k/s", "k events/s"),
        ],
        ["floor: orjson.loads of the same lines", fmt_range(f.floor_eps, "k/s").replace("k/s", "k events/s")],
    ]
    out = table(["W3", "figure"], rows)
    if f.decode_eps.values and f.floor_eps.values:
        ratio = f.floor_eps.median / f.decode_eps.median
        out += f"\nratio: decode_log takes {ratio:.1f}× the orjson floor's time"
    if f.suite_failures:
        out += "\nFAILURES: " + "; ".join(f.suite_failures)
    return out


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    figure: str
    ok: bool | None

    def to_json(self) -> dict[str, Any]:
        return {"target": self.name, "figure": self.figure, "met": self.ok}


def _abs(value: float, limit: float, unit: str = "s") -> str:
    mark = "≤" if value <= limit else ">"
    scale = 1e3 if unit == "ms" else 1.0
    return f"{mark} {limit * scale:g} {unit}"


def targets(
    w1: dict[int, dict[str, Figures]] | None,
    loop: dict[int, dict[str, LoopFigures]] | None,
    w2: W2Figures | None,
    w3: W3Figures | None,
) -> list[Target]:
    out: list[Target] = []
    if w1:
        turns = max(w1)
        figs = w1[turns]
        floor_d = figs.get("jsonl-deltas")
        lang = figs.get("langgraph-sqlite")
        for key in DSH:
            if key not in figs:
                continue
            d = figs[key]
            name = NAMES[key.removeprefix("dsh-")]
            floor = figs.get(FLOOR_OF[key])
            if floor is not None:
                r = d.append.median / floor.append.median
                extra = ""
                off_loop = figs.get("jsonl-deltas-async")
                if off_loop is not None:
                    r_off = d.append.median / off_loop.append.median
                    extra = f"; {r_off:.2f}× the floor with fsync off the loop"
                if turns == 2000:
                    extra = f"; absolute: {_abs(d.append.median, ABS_APPEND[key])} anchor target{extra}"
                out.append(
                    Target(
                        f"W1 T={turns} {name} append ≤ 1.5× its every-delta floor",
                        f"{d.append.median:.3f} s = {r:.2f}× floor {floor.append.median:.3f} s"
                        + (f" ({extra[2:]})" if extra else ""),
                        r <= 1.5,
                    )
                )
            g = d.growth.median
            out.append(Target(f"W1 T={turns} {name} growth ≤ 1.3", f"{g:.2f}", g <= 1.3))
            if lang is not None and turns < 2000:
                out.append(
                    Target(
                        f"W1 T={turns} {name} vs LangGraph: ≥ 100× faster, ≥ 1,000× smaller",
                        f"{lang.append.median / d.append.median:,.0f}× faster, "
                        f"{lang.size.median / d.size.median:,.0f}× smaller (defined at T = 2000: "
                        "LangGraph's cost grows with T²)",
                        None,
                    )
                )
            elif lang is not None:
                fa = lang.append.median / d.append.median
                out.append(
                    Target(
                        f"W1 T={turns} {name} ≥ 100× faster than LangGraph SqliteSaver",
                        f"{fa:,.0f}× ({lang.append.median:.1f} s vs {d.append.median:.3f} s)",
                        fa >= 100,
                    )
                )
                sa = lang.size.median / d.size.median
                judged_on = SIZE_JUDGED_ON.get(key)
                judged_elsewhere = judged_on is not None and judged_on in figs
                out.append(
                    Target(
                        f"W1 T={turns} {name} ≥ 1,000× smaller than LangGraph SqliteSaver",
                        f"{sa:,.0f}× ({lang.size.median / 1e6:,.0f} MB vs {d.size.median / 1e6:.1f} MB)"
                        + (f" (judged on {judged_on})" if judged_elsewhere else ""),
                        None if judged_elsewhere else sa >= 1000,
                    )
                )
            if floor_d is not None:
                out.append(
                    Target(
                        f"W1 T={turns} {name} cold load ≤ every-delta JSONL floor",
                        f"{d.load.median * 1e3:.1f} ms vs floor {floor_d.load.median * 1e3:.1f} ms"
                        + (
                            f" (anchor 84 ms: {_abs(d.load.median, ANCHOR_DELTA_LOAD, 'ms')})"
                            if turns == 2000
                            else ""
                        ),
                        d.load.median <= floor_d.load.median,
                    )
                )
            if floor is not None:
                r = d.fork.median / floor.fork.median
                out.append(
                    Target(
                        f"W1 T={turns} {name} fork ≤ 2× the floor's copy",
                        f"{d.fork.median * 1e3:.1f} ms = {r:.2f}× floor {floor.fork.median * 1e3:.1f} ms"
                        + (f" (anchor floor {ANCHOR_FLOOR_FORK[key] * 1e3:g} ms)" if turns == 2000 else ""),
                        r <= 2,
                    )
                )
            if floor_d is not None:
                out.append(
                    Target(
                        f"W1 T={turns} {name} on disk ≤ every-delta floor",
                        f"{d.size.median / 1e6:.2f} MB vs {floor_d.size.median / 1e6:.2f} MB",
                        d.size.median <= floor_d.size.median,
                    )
                )
    if loop:
        turns = max(loop)
        for kind, f in loop[turns].items():
            name = "JSONL" if kind == "jsonl" else "SQLite"
            out.append(
                Target(
                    f"W1-loop T={turns} {name} loop append ≤ 2× store-only",
                    f"{f.loop.median:.3f} s = {f.ratio:.2f}× store-only {f.store_only.median:.3f} s",
                    f.ratio <= 2,
                )
            )
            g = f.growth.median
            out.append(Target(f"W1-loop T={turns} {name} growth ≤ 1.3", f"{g:.2f}", g <= 1.3))
    if w2:
        ms = w2.dsh_per_call.median * 1e3
        out.append(Target(f"W2 N={w2.calls} ≤ 0.45 ms per replayed call", f"{ms:.3f} ms", ms <= 0.45))
        if w2.vcr_error is None:
            r = w2.vcr_per_call.median / w2.dsh_per_call.median
            out.append(
                Target(
                    f"W2 N={w2.calls} ≥ 10× faster than VCR.py",
                    f"{r:.1f}× ({w2.vcr_per_call.median * 1e3:.2f} ms vs {ms:.3f} ms)",
                    r >= 10,
                )
            )
    if w3:
        out.append(
            Target(
                "W3 scenario suite in replay < 5 s",
                f"{w3.suite.median:.3f} s in process; {w3.pytest_wall.median:.2f} s via pytest (wall)",
                w3.pytest_wall.median < 5 and not w3.suite_failures,
            )
        )
        if w3.decode_eps.values:
            out.append(
                Target(
                    "W3 v0 decode throughput (reported, no target)",
                    f"{w3.decode_eps.median / 1e3:,.0f}k events/s vs orjson floor "
                    f"{w3.floor_eps.median / 1e3:,.0f}k events/s",
                    None,
                )
            )
    return out


def targets_table(items: list[Target]) -> str:
    rows = [[t.name, t.figure, verdict(t.ok)] for t in items]
    return table(["target (bench/README.md)", "figure (median)", "verdict"], rows)


def stat_json(stat: Stat) -> dict[str, Any]:
    return stat.to_json()

"""Run dsh's benchmark suite: ``python bench/run.py [--quick] [--json PATH]`` (or ``make bench``).

Workloads and targets are defined in ``bench/README.md``, which
explains how to read the output. Progress goes to stderr, the tables to stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench`` importable as a package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, machine, machine_line
from bench.report import (
    loop_table,
    targets,
    targets_table,
    w1_ratio_table,
    w1_table,
    w2_table,
    w3_table,
)
from bench.w1_loop import run_w1_loop
from bench.w1_store import run_w1
from bench.w2_replay import CALLS, run_w2
from bench.w3_suite import run_w3
from bench.w4_report import w4_tables, w4_targets
from bench.w4_scale import run_w4

WORKLOADS = ("w1", "w1-loop", "w2", "w3", "w4")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/run.py", description=__doc__)
    p.add_argument("--quick", action="store_true", help="T = 200 only, fewer rounds (under a minute)")
    p.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    p.add_argument("--only", metavar="LIST", help=f"comma-separated subset of {','.join(WORKLOADS)}")
    p.add_argument("--sizes", metavar="T,T", help="W1 / W1-loop sizes (default 200,2000; quick: 200)")
    p.add_argument("--rounds", type=int, help="interleaved rounds per figure (default 5; quick: 3)")
    p.add_argument("--systems", metavar="LIST", help="W1 systems to run (keys as printed), default all")
    p.add_argument("--workdir", metavar="DIR", help="where stores are written (default: a temp dir)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    only = set(args.only.split(",")) if args.only else set(WORKLOADS)
    unknown = only - set(WORKLOADS)
    if unknown:
        print(f"unknown workload(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([200] if args.quick else [200, 2000])
    rounds = args.rounds or (3 if args.quick else 5)
    systems = set(args.systems.split(",")) if args.systems else None
    started = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    info = machine()
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="dsh-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {"machine": info, "quick": args.quick, "sizes": sizes, "rounds": rounds}
    try:
        w1 = run_w1(sizes, rounds, workdir, progress, systems) if "w1" in only else None
        loop = run_w1_loop(sizes, rounds, workdir, progress) if "w1-loop" in only else None
        w2 = run_w2(rounds + 2, workdir, progress, CALLS) if "w2" in only else None
        w3 = run_w3(rounds, progress) if "w3" in only else None
        w4 = run_w4(args.quick, progress) if "w4" in only else None
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.perf_counter() - started

    out: list[str] = [f"# dsh bench ({'quick' if args.quick else 'full'} run, {elapsed:.0f} s)", ""]
    out += [machine_line(info), ""]
    if w1 is not None:
        for turns, figs in w1.items():
            out += [f"## W1 — long conversation, T = {turns} (median (min–max) of {rounds} rounds)", ""]
            out += [w1_table(figs), ""]
            notes = [f"{f.key}: {n}" for f in figs.values() for n in f.notes]
            if notes:
                out += ["notes: " + "; ".join(notes), ""]
            out += [f"### W1 ratios, T = {turns} (dsh against each anchor and floor, medians)", ""]
            out += [w1_ratio_table(figs), ""]
        results["w1"] = {str(t): {k: f.to_json() for k, f in figs.items()} for t, figs in w1.items()}
    if loop is not None:
        for turns, lfigs in loop.items():
            out += [f"## W1-loop — the same conversation through Agent.run_turn, T = {turns}", ""]
            out += [loop_table(lfigs), ""]
        results["w1_loop"] = {str(t): {k: f.to_json() for k, f in lf.items()} for t, lf in loop.items()}
    if w2 is not None:
        out += [f"## W2 — replay, N = {w2.calls} calls × 40 text deltas", "", w2_table(w2), ""]
        results["w2"] = w2.to_json()
    if w3 is not None:
        out += ["## W3 — scenario suite and legacy logs", "", w3_table(w3), ""]
        results["w3"] = w3.to_json()
    if w4 is not None:
        out += ["## W4 — long sessions and many sessions", "", *w4_tables(w4)]
        results["w4"] = w4
    checks = targets(w1, loop, w2, w3) + (w4_targets(w4) if w4 is not None else [])
    out += ["## Targets (bench/README.md)", ""]
    if w1 is not None and max(w1) < 2000:
        out += ["(the W1 targets are defined at T = 2000; at smaller T they are indicative)", ""]
    out += [targets_table(checks), ""]
    results["targets"] = [t.to_json() for t in checks]
    if (REPO / "bench" / "postgres_bench.py").exists():
        out += ["PostgreSQL store: run `python -m bench.postgres_bench` separately (needs a server).", ""]
    print("\n".join(out))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

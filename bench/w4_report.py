"""W4's tables and target verdicts (issue #40), from what ``bench.w4_scale`` measured."""

from __future__ import annotations

from typing import Any

from bench.common import table
from bench.report import Target


def _or_dash(value: float | None, form: str) -> str:
    return "—" if value is None else form.format(value)


def w4_tables(w4: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if w4["resume"]:
        rows = [
            [
                f"{r['events']:,}",
                r["shape"] + (", JSONL" if r.get("store") == "jsonl" else ""),
                f"{r['resume_s']:.3f} s",
                f"{r['resume_rss_mb']:.0f} MB",
                f"{r['floor_s']:.2f} s",
                _or_dash(r["first_request_s"], "{:.2f} s"),
                _or_dash(r["ratio"], "{:.1f}×"),
                _or_dash(r["peak_rss_mb"], "{:.0f} MB"),
                f"{r['db_mb']:.0f} MB",
                _or_dash(r.get("first_turn_cpu_ms"), "{:.0f} ms"),
                _or_dash(r.get("later_turn_cpu_ms"), "{:.1f} ms"),
            ]
            for r in w4["resume"]
        ]
        head = [
            "events",
            "shape",
            "Agent.resume",
            "its peak RSS",
            "floor",
            "dsh run -c → 1st request",
            "÷ floor",
            "its peak RSS",
            "db",
            "1st turn, CPU",
            "a later turn, CPU",
        ]
        out += [
            "### W4 resume (SQLite unless said; floor: a fresh Python reading the rows' seq, type,"
            " time — JSONL: reading the session's file and splitting its lines)",
            "",
        ]
        out += [table(head, rows), ""]
    if w4["list"]:
        rows = [
            [
                f"{r['sessions']:,}",
                "JSONL" if r.get("store") == "jsonl" else "SQLite",
                f"{r['startup_cpu_s']:.3f} s",
                f"{r['list_n50_cpu_s']:.3f} s",
                f"{r['list_all_cold_cpu_s']:.3f} s",
                f"{r['list_all_cpu_s']:.3f} s",
                _or_dash(r.get("tree_cpu_s"), "{:.3f} s"),
                _or_dash(r.get("viewer_first_page_cpu_s"), "{:.3f} s"),
                _or_dash(r.get("viewer_page_cpu_s"), "{:.3f} s"),
            ]
            for r in w4["list"]
        ]
        head = [
            "sessions",
            "store",
            "start-up",
            "sessions list -n 50",
            "sessions list, first",
            "sessions list",
            "sessions tree",
            "viewer: 1st page",
            "a later page",
        ]
        out += [
            "### W4 listing (CPU past start-up: less `dsh sessions list --help`'s, `tree --help`'s for"
            " the tree; the viewer's pages served in process, the first by a viewer just started over"
            " a store no listing kept a digest in)",
            "",
        ]
        out += [table(head, rows), ""]
    o = w4.get("original")
    if o:
        rows = [
            [
                f"{o['sessions']} / {o['events']:,}",
                f"{o['write_s']:.1f} s",
                f"{o['sqlite_mb']:.0f} MB",
                f"{o['surface_read_p50_ms']:.1f} ms",
                f"{o['full_read_p50_ms']:.1f} ms",
                f"{o['tail50_p50_ms']:.2f} ms",
                _or_dash(o.get("tail50_warm_p50_ms"), "{:.2f} ms"),
                f"{o['fork_all_s']:.1f} s",
                f"{o['zstd_jsonl_mb']:.1f} MB",
            ]
        ]
        head = [
            "sessions / events",
            "write",
            "SQLite",
            "surface p50",
            "full p50",
            "tail-50 p50",
            "warm",
            "fork all",
            "zstd JSONL",
        ]
        out += ["### W4 the original's shape (96% chunks, 512-event batches)", ""]
        out += [table(head, rows), ""]
    return out


def w4_targets(w4: dict[str, Any]) -> list[Target]:
    out: list[Target] = []
    for r in w4["resume"]:
        if r.get("store") == "jsonl":  # reported, not a target's figure (bench/README.md: SQLite)
            continue
        if r["events"] == 100_000:
            out.append(
                Target(
                    f"W4 resume 100k ({r['shape']}) ≤ 0.5 s", f"{r['resume_s']:.3f} s", r["resume_s"] <= 0.5
                )
            )
        if r["events"] == 1_000_000:
            ok = r["resume_s"] <= 3 and r["resume_rss_mb"] <= 1024
            out.append(
                Target(
                    f"W4 resume 1M ({r['shape']}) ≤ 3 s, ≤ 1 GiB",
                    f"{r['resume_s']:.2f} s, {r['resume_rss_mb']:.0f} MB",
                    ok,
                )
            )
    for r in w4["list"]:
        if r["sessions"] == 10_000 and r.get("store", "sqlite") == "sqlite":
            out.append(
                Target(
                    "W4 sessions list -n 50 at 10,000 ≤ 0.1 s CPU",
                    f"{r['list_n50_cpu_s']:.3f} s",
                    r["list_n50_cpu_s"] <= 0.1,
                )
            )
            out.append(
                Target(
                    "W4 sessions list at 10,000 ≤ 0.5 s CPU",
                    f"{r['list_all_cpu_s']:.3f} s",
                    r["list_all_cpu_s"] <= 0.5,
                )
            )
            page = r.get("viewer_first_page_cpu_s")
            if page is not None:
                target = "W4 viewer's first page at 10,000 ≤ 0.1 s CPU"
                out.append(Target(target, f"{page:.3f} s", page <= 0.1))
    o = w4.get("original")
    if o and o["events"] >= 2_000_000:
        out.append(Target("W4 original: SQLite written ≤ 13 s", f"{o['write_s']:.1f} s", o["write_s"] <= 13))
        out.append(Target("W4 original: SQLite ≤ 75 MB", f"{o['sqlite_mb']:.0f} MB", o["sqlite_mb"] <= 75))
        out.append(
            Target(
                "W4 original: surface read p50 ≤ 6 ms",
                f"{o['surface_read_p50_ms']:.1f} ms",
                o["surface_read_p50_ms"] <= 6,
            )
        )
        out.append(
            Target(
                "W4 original: tail-50 p50 ≤ 0.4 ms", f"{o['tail50_p50_ms']:.2f} ms", o["tail50_p50_ms"] <= 0.4
            )
        )
        out.append(
            Target(
                "W4 original: zstd JSONL ≤ 31 MB", f"{o['zstd_jsonl_mb']:.1f} MB", o["zstd_jsonl_mb"] <= 31
            )
        )
    return out

"""W3 — the bundled scenario suite in replay mode, and version-0 decode throughput.

- Suite: every bundled scenario directory (``dsh.snapshot.runner.SCENARIOS``) replayed with
  ``run_scenario(dir, "replay")`` in one process, one after another: wall time of the whole
  suite (each must pass).
- Decode: every version-0 log of the original under ``../shared/fixtures/dsh-upstream``
  decoded with ``decode_log`` (packed rows expanded, checks included), repeated to a
  measurable time: events per second; the floor is ``orjson.loads`` of the same lines.
- Also the wall time of ``pytest`` over the scenario directory in a fresh process (the
  snapshot plugin collects each scenario as a test): interpreter and pytest start included.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.common import FIXTURES, REPO, Stat, now
from dsh.snapshot.runner import SCENARIOS, run_scenario
from dsh.store.logfile import decode_log


def scenario_dirs() -> list[Path]:
    return sorted(p for p in SCENARIOS.iterdir() if (p / "input.json").is_file())


async def _suite(dirs: list[Path]) -> list[str]:
    failures = []
    for directory in dirs:
        result = await run_scenario(directory, "replay")
        if not result.ok:
            failures.append(f"{directory.name}: {result.failure_text()[:200]}")
    return failures


def v0_logs() -> list[tuple[str, bytes]]:
    """Every version-0 log of the original (``session*.jsonl`` under the fixtures)."""
    if not FIXTURES.is_dir():
        return []
    out = []
    for path in sorted(FIXTURES.rglob("session*.jsonl")):
        data = path.read_bytes()
        if orjson.loads(data.split(b"\n", 1)[0]).get("version") == 0:
            out.append((str(path.relative_to(FIXTURES)), data))
    return out


@dataclass(slots=True)
class W3Figures:
    scenarios: int = 0
    suite: Stat = field(default_factory=Stat)
    pytest_wall: Stat = field(default_factory=Stat)
    """``pytest`` over the scenario directory in a fresh process: what a user waits for."""
    suite_failures: list[str] = field(default_factory=list)
    logs: int = 0
    events: int = 0
    lines: int = 0
    decode_eps: Stat = field(default_factory=Stat)
    floor_eps: Stat = field(default_factory=Stat)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenarios": self.scenarios,
            "suite_s": self.suite.to_json(),
            "pytest_wall_s": self.pytest_wall.to_json(),
            "suite_failures": self.suite_failures,
            "v0_logs": self.logs,
            "v0_events": self.events,
            "v0_lines": self.lines,
            "decode_events_per_s": self.decode_eps.to_json(),
            "floor_orjson_events_per_s": self.floor_eps.to_json(),
        }


def _decode_all(logs: list[tuple[str, bytes]]) -> int:
    return sum(len(decode_log(data, name).events) for name, data in logs)


def _floor_all(lines: list[list[bytes]]) -> int:
    loads = orjson.loads
    count = 0
    for file_lines in lines:
        count += len([loads(line) for line in file_lines])
    return count


def run_w3(rounds: int, progress: Callable[[str], None], min_seconds: float = 0.2) -> W3Figures:
    figs = W3Figures()
    dirs = scenario_dirs()
    figs.scenarios = len(dirs)
    logs = v0_logs()
    figs.logs = len(logs)
    lines = [[ln for ln in data.split(b"\n") if ln] for _, data in logs]
    if logs:
        figs.events = _decode_all(logs)
        figs.lines = sum(len(x) for x in lines)
        # Repeat enough to time it: the fixtures are small.
        t0 = now()
        reps = 0
        while now() - t0 < min_seconds / 4:
            _decode_all(logs)
            reps += 1
        reps = max(1, reps * 4)
    for r in range(rounds):
        progress(f"W3 round {r + 1}/{rounds}: {len(dirs)} scenarios in replay mode")
        t0 = now()
        failures = asyncio.run(_suite(dirs))
        figs.suite.add(now() - t0)
        figs.suite_failures = failures
        t0 = now()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SCENARIOS)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        figs.pytest_wall.add(now() - t0)
        if proc.returncode != 0:
            figs.suite_failures.append(f"pytest exited {proc.returncode}: {proc.stdout[-300:]}")
        if logs:
            t0 = now()
            for _ in range(reps):
                _decode_all(logs)
            figs.decode_eps.add(figs.events * reps / (now() - t0))
            t0 = now()
            for _ in range(reps):
                _floor_all(lines)
            figs.floor_eps.add(figs.events * reps / (now() - t0))
    return figs

"""The original's snapshot fixtures, provided by the replay harness for the original's
recordings: the subagent-settlement marker its scenarios wait on (``waitForFile``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dsh.replay.fixtures import SETTLED_MARKER
from dsh.snapshot import run_scenario
from tests.patience import patience
from tests.scenario_recipes import SNAPSHOTS

WAIT = {"op": "waitForFile", "path": SETTLED_MARKER}


def _waiting_on_the_marker(source: Path, tmp_path: Path) -> Path:
    """A copy of the scenario whose steps wait for the marker after the first prompt."""
    scenario = tmp_path / source.name
    shutil.copytree(source, scenario)
    document = json.loads((scenario / "input.json").read_text())
    steps = document["steps"]
    at = next(i for i, s in enumerate(steps) if s["op"] == "prompt") + 1
    steps.insert(at, WAIT)
    (scenario / "input.json").write_text(json.dumps(document))
    return scenario


async def test_a_child_ending_its_turn_writes_the_settlement_marker(upstream: Path, tmp_path: Path) -> None:
    """Red without the fixture: the wait times out."""
    scenario = _waiting_on_the_marker(upstream / "subagent-spawn-in-process", tmp_path)
    result = await run_scenario(scenario, "replay", step_timeout=patience(30))
    assert result.ok, result.failure_text()


async def test_our_recordings_were_made_without_the_marker(tmp_path: Path) -> None:
    scenario = _waiting_on_the_marker(SNAPSHOTS / "subagent-spawn", tmp_path)
    result = await run_scenario(scenario, "replay", step_timeout=1.0)
    assert any(f"file {SETTLED_MARKER}" in p for p in result.problems), result.problems

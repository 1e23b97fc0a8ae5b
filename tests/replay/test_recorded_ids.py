"""Recorded session ids: in a replay into a fresh store each live session takes the id of the
recorded session it is bound to, so prompts and tool arguments naming recorded ids mean the
same session live; an id already taken in the target store gets a fresh one (ids are
normalized in every comparison), and the replay says so once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dsh.snapshot import run_scenario
from dsh.store.memory import MemoryEventStore
from tests.replay.test_recording import _dsh
from tests.scenario_recipes import SNAPSHOTS

PARENT = "11111111-1111-4111-8111-111111111111"
CHILD = "33333333-3333-4333-8333-333333333333"


async def test_live_sessions_take_their_recorded_ids_in_a_fresh_store(upstream: Path) -> None:
    store = MemoryEventStore()
    result = await run_scenario(upstream / "subagent-continuable", "replay", store=store)
    assert result.ok, result.failure_text()
    assert [(s.recorded_id, s.live_id) for s in result.sessions] == [(PARENT, PARENT), (CHILD, CHILD)]
    assert sorted(s.header.id for s in await store.list_sessions()) == [PARENT, CHILD]
    assert result.notes == []


async def test_ids_taken_in_the_target_store_replay_under_fresh_ids_said_once(upstream: Path) -> None:
    store = MemoryEventStore()
    first = await run_scenario(upstream / "subagent-continuable", "replay", store=store)
    assert first.ok, first.failure_text()
    again = await run_scenario(upstream / "subagent-continuable", "replay", store=store)
    assert again.ok, again.failure_text()
    live = [s.live_id for s in again.sessions]
    assert PARENT not in live and CHILD not in live and None not in live
    assert len(again.notes) == 1 and PARENT in again.notes[0] and "fresh session ids" in again.notes[0]


def test_a_cli_replay_into_a_store_holding_the_recorded_ids_says_so_once(tmp_path: Path) -> None:
    scenario = tmp_path / "subagent-mixed"
    shutil.copytree(SNAPSHOTS / "subagent-mixed", scenario)
    store = f"sqlite:{tmp_path / 's.db'}"
    args = ("scenario", "replay", str(scenario), "--json", "--trust", "--store", store)
    runs = [_dsh(*args) for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr
        assert json.loads(done.stdout.splitlines()[-1])["ok"] is True
    assert "already in the target store" not in runs[0].stderr
    [note] = [line for line in runs[1].stderr.splitlines() if "already in the target store" in line]
    assert "fresh session ids" in note
    assert json.loads(runs[1].stdout.splitlines()[-1])["notes"] == [note]

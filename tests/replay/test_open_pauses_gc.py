"""Opening a replay pauses the cyclic garbage collector (issue 40, item 3) and always leaves it
as it found it: running after a load, after a load that failed, and still off when it was off."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.errors import ScenarioError
from dsh.replay import files
from dsh.replay.files import load_replay_model
from dsh.store.bulk import paused_gc as gc_paused

SCENARIO = Path(__file__).parents[2] / "src/dsh/snapshot/scenarios/text-turn"


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_paused_while_a_recording_is_read(
    collector_on: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    during: list[bool] = []
    real = files.read_recorded

    def reading(directory: Path) -> files.RecordedLogs:
        during.append(gc.isenabled())
        return real(directory)

    monkeypatch.setattr(files, "read_recorded", reading)
    model, _ = load_replay_model(SCENARIO, cwd=tmp_path)
    assert during == [False]
    assert gc.isenabled()
    assert model.primary.entries


def test_a_failed_open_leaves_the_collector_running(collector_on: None, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError):
        load_replay_model(tmp_path / "missing")
    assert gc.isenabled()


def test_a_paused_collector_stays_paused(collector_on: None) -> None:
    gc.disable()
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()

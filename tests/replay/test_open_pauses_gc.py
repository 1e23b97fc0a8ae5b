"""Opening a replay pauses the cyclic garbage collector (issue 40, item 3) and always leaves it
as it found it: running after a load, after a load that failed, and still off when it was off."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.errors import ScenarioError
from dsh.loop import Agent, AgentConfig
from dsh.replay import files
from dsh.replay.files import load_replay_model
from dsh.snapshot.runner import run_scenario
from dsh.store import bulk
from dsh.store.bulk import paused_gc as gc_paused
from dsh.store.memory import MemoryEventStore
from dsh.subagents import standard_tools

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


def _in_a_generation(objects: list[object]) -> int:
    """How many of ``objects`` a collection of any generation would walk."""
    walked = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
    return sum(id(o) in walked for o in objects)


async def test_an_open_replay_keeps_its_recording_out_of_the_collectors_walks(
    collector_on: None, tmp_path: Path
) -> None:
    """What the open built (the recorded events, the scripts) sits in the permanent generation
    until the replay is closed: a collection during the replay does not walk the recording
    again (at 5,000 calls each walk cost 0.15–0.2 s, three of them after every open)."""
    model, recorded = load_replay_model(SCENARIO, cwd=tmp_path)
    assert recorded.primary is not None
    built: list[object] = [*recorded.primary.events, *model.primary.entries, model.primary]
    assert _in_a_generation(built) == 0
    gc.collect()
    assert _in_a_generation(built) == 0
    await model.aclose()
    if not bulk.heap_held():  # no other open replay in this process holds it frozen
        assert _in_a_generation(built) == len(built)
    await model.aclose()  # closing twice releases once


def test_a_failed_open_freezes_nothing(collector_on: None, tmp_path: Path) -> None:
    held = bulk.heap_held()
    with pytest.raises(ScenarioError):
        load_replay_model(tmp_path / "missing")
    assert bulk.heap_held() == held


async def test_a_scenario_run_releases_the_frozen_heap_when_it_ends() -> None:
    held = bulk.heap_held()
    result = await run_scenario(SCENARIO, "replay")
    assert result.ok, result.problems
    assert bulk.heap_held() == held


async def test_what_a_replay_built_before_a_call_is_out_of_the_collectors_walks(
    collector_on: None, tmp_path: Path
) -> None:
    """Each served call moves what the live run built so far (its sessions' events, grown call
    after call) to the permanent generation while the replay holds the heap: a long replay's
    collections walk only what the current call made (5,000 calls: 0.3 s of collections)."""
    model, _ = load_replay_model(SCENARIO, cwd=tmp_path)
    config = AgentConfig(model="deepseek-chat")
    store = MemoryEventStore()
    agent = await Agent.create(store, model=model, tools=standard_tools(), config=config, cwd=tmp_path)
    built_before: list[object] = [["made before the call"] for _ in range(3)]  # lists: tracked
    assert _in_a_generation(built_before) == 3
    await agent.run_turn("Reply with exactly the word: PONG. Do not use any tools.")  # may diverge:
    assert model.primary.bound_to == agent.id, "the model was called"  # the set-up is not the runner's
    assert _in_a_generation(built_before) == 0
    await agent.aclose()
    await model.aclose()
    if not bulk.heap_held():  # no other open replay in this process holds it frozen
        assert _in_a_generation(built_before) == 3


def test_a_hold_released_refreezes_nothing(collector_on: None) -> None:
    hold = bulk.freeze_heap()
    hold.release()
    made: list[object] = [["made after the release"]]
    hold.refreeze()
    assert _in_a_generation(made) == 1


async def test_a_scenario_run_reads_its_logs_back_with_the_collector_paused(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the run, every live log is read back and walked into the transcript: bulk work
    with no cycle, which collections of the grown heap made a third of a 5,000-call replay."""
    from dsh.snapshot import runner

    during: list[bool] = []
    real = runner.walk_transcript  # type: ignore[attr-defined]

    def walking(*args: object, **kwargs: object) -> object:
        during.append(gc.isenabled())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "walk_transcript", walking)
    result = await run_scenario(SCENARIO, "replay")
    assert result.ok, result.problems
    assert during == [False]
    assert gc.isenabled()

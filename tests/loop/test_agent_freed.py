"""A closed agent is freed by reference counts: its components hold it weakly
(``dsh.loop.weak``), so what it held — its session, a replay's recording — goes when the last
outside reference does, with the cyclic collector off (a long read's paused, frozen heap can
put that collector off for good: ``dsh.store.bulk``)."""

from __future__ import annotations

import gc
import shutil
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.loop import Agent, AgentConfig
from dsh.loop.retry import NO_DELAY
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.snapshot.runner import run_scenario
from dsh.store.memory import MemoryEventStore
from dsh.subagents import standard_tools

SCENARIOS = Path(__file__).resolve().parents[2] / "src" / "dsh" / "snapshot" / "scenarios"


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class _Held:
    """Something only the agent holds (in its ``extras``)."""


async def test_a_closed_agent_with_every_standard_tool_is_freed_by_reference_counts(
    tmp_path: Path, no_collector: None
) -> None:
    store = MemoryEventStore()
    model = ScriptedModel(
        [tool_call_reply("c1", "glob", {"pattern": "*"}), text_reply("done"), text_reply("again")]
    )
    config = AgentConfig(model="m", retry=NO_DELAY)
    held = _Held()
    agent = await Agent.create(
        store, model=model, tools=standard_tools(), config=config, cwd=tmp_path, extras={"held": held}
    )
    await agent.run_turn("look around")
    await agent.run_turn("and again")
    await agent.aclose()
    gone, what = weakref.ref(agent), weakref.ref(held)
    del agent, held
    assert gone() is None, "the agent is a reference cycle"
    assert what() is None, "something still holds what only the agent held"


async def test_a_replayed_scenario_leaves_no_cycle_behind(tmp_path: Path, no_collector: None) -> None:
    """The replay's model (the recording it serves), its agents and the transcript walk over
    its logs go by reference counts: the collector finds nothing left. (The first replay in a
    process is not counted: pydantic's first schema of each tool leaves cycles, once.)"""
    for attempt in ("first", "second"):
        directory = tmp_path / attempt
        shutil.copytree(SCENARIOS / "subagent-multi", directory)
        gc.collect()
        result = await run_scenario(directory, "replay")
        assert result.ok, result
        del result
    left = gc.collect()  # what reference counts did not free: the cycles left
    assert left == 0, f"{left} objects were left in reference cycles"

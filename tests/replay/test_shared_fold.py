"""After a scenario run, the transcript's one fold of each log also gives the run's spend."""

from __future__ import annotations

import pytest

from dsh.session.spend import tree_spend
from dsh.snapshot import run_scenario
from dsh.snapshot.runner import SCENARIOS
from dsh.snapshot.transcript import walk_transcript
from dsh.store import LoadedSession
from dsh.store.memory import MemoryEventStore


async def _run(name: str) -> tuple[object, dict[str, LoadedSession], str]:
    store = MemoryEventStore()
    result = await run_scenario(SCENARIOS / name, "replay", store=store)
    assert result.ok, result.failure_text()
    sessions = {s.header.id: await store.load(s.header.id) for s in await store.list_sessions()}
    root = next(sid for sid, loaded in sessions.items() if loaded.header.parent_session is None)
    return result.spend, sessions, root


@pytest.mark.parametrize("name", ["subagent-spawn", "subagent-multi", "subagent-fork", "subagent-mixed"])
async def test_the_reported_spend_is_what_a_fold_of_its_own_makes(name: str) -> None:
    spend, sessions, root = await _run(name)
    assert len(sessions) > 1
    alone = tree_spend(sessions, root)  # every log folded again, as `dsh cost` does
    assert spend == alone
    assert sum(len(s.ledger.calls) for s in alone.sessions) > len(alone.sessions[0].ledger.calls)


async def test_a_walk_hands_on_the_ledgers_of_whole_logs_only() -> None:
    """A fork child's log starts with its parent's prefix, which the transcript does not fold:
    its spend is folded from the whole log, not taken from the walk."""
    _, sessions, root = await _run("subagent-fork")
    walk = walk_transcript(sessions, root)
    forked = {sid for sid, loaded in sessions.items() if loaded.inherited_event_count}
    assert forked, "the scenario forks"
    assert set(walk.ledgers) == set(sessions) - forked
    assert walk.ledgers[root].calls == tree_spend(sessions, root).sessions[0].ledger.calls

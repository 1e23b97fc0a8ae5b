"""The workspace context in replays of the original's recordings: compared like every injected
message, and the replayed log's event seqs line up with the recording's (session_event_read)."""

from __future__ import annotations

import shutil
from pathlib import Path

from dsh.replay.files import read_recorded
from dsh.snapshot import run_scenario
from dsh.store.memory import MemoryEventStore


async def test_a_different_recorded_instruction_diverges(upstream: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "agent-instructions"
    shutil.copytree(upstream / "agent-instructions", scenario)
    log = scenario / "session.jsonl"
    log.write_text(log.read_text().replace("Root snapshot instruction.", "Root snapshot rule."))
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    divergence = result.sessions[0].divergence
    assert divergence is not None and divergence.call == 1
    assert "Root snapshot rule." in divergence.recorded and "Root snapshot instruction." in divergence.live


async def test_a_different_recorded_catalog_diverges(upstream: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "skill-load"
    shutil.copytree(upstream / "skill-load", scenario)
    log = scenario / "session.jsonl"
    log.write_text(log.read_text().replace("Exercise project skill discovery", "Exercise skill discovery"))
    result = await run_scenario(scenario, "replay")
    assert not result.ok and result.sessions[0].divergence is not None


async def test_the_replayed_log_keeps_the_recorded_seqs(upstream: Path) -> None:
    store = MemoryEventStore()
    result = await run_scenario(upstream / "agent-instructions", "replay", store=store)
    assert result.ok, result.failure_text()
    live = (await store.load(result.sessions[0].live_id or "")).events
    recorded = read_recorded(upstream / "agent-instructions").primary
    assert recorded is not None
    want = [e.type for e in recorded.events[:9]]
    assert [e.type for e in live[:9]] == want  # inbox, turn/start, claim, step/start, prompt, ...
    assert live[5].data["source"]["kind"] == "agent-instructions"
    assert live[7].type == "session/title" and live[7].data == recorded.events[7].data

"""``dsh scenario replay`` reads a recording once: the warning naming the commands it runs and
the replay itself use the same read (a 5,000-call recording took ~0.3 s to read again, and
a file changed between two reads would have been warned about and run apart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.replay import files, permissions
from dsh.replay.files import read_recorded
from dsh.replay.permissions import untrusted_warning
from dsh.snapshot.runner import run_scenario

SCENARIO = Path(__file__).parents[2] / "src/dsh/snapshot/scenarios/text-turn"


async def test_a_replay_given_its_recording_does_not_read_it_again(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = read_recorded(SCENARIO)

    def again(directory: Path) -> files.RecordedLogs:
        raise AssertionError(f"{directory} read a second time")

    monkeypatch.setattr(files, "read_recorded", again)
    monkeypatch.setattr(permissions, "read_recorded", again)
    assert untrusted_warning(SCENARIO, recorded=recorded) is None  # text-turn runs no command
    result = await run_scenario(SCENARIO, "replay", recorded=recorded)
    assert result.ok, result.problems
    with pytest.raises(AssertionError, match="read a second time"):
        await run_scenario(SCENARIO, "replay")

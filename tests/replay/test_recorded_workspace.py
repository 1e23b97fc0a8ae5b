"""A recording whose header ``cwd`` is a literal path (a fixture not cwd-tokenized) and whose
tool results name files under it: that path is normalized on the recorded side exactly as
the live workspace on the live side, and a served call naming it names the live workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.snapshot import run_scenario
from tests.replay.test_scenarios import _edited_recording

LITERAL = "/home/recorder/acp-snap-cwd-Xy12Ab"


def _literal_cwd(lines: list[str]) -> None:
    lines[:] = [line.replace("{{cwd}}", LITERAL) for line in lines]


@pytest.mark.parametrize("name", ["fs-write", "fs-escalation-approved", "fs-read"])
async def test_a_literal_recorded_workspace_is_normalized_like_the_live_one(
    upstream: Path, tmp_path: Path, name: str
) -> None:
    """Red before: the recorded tool result names ``/home/recorder/…/notes.txt`` where the
    live one names the live workspace."""
    scenario = _edited_recording(upstream, tmp_path, name, _literal_cwd)
    header = json.loads((scenario / "session.jsonl").read_text().splitlines()[0])
    assert header["cwd"] == LITERAL
    result = await run_scenario(scenario, "replay")
    assert result.ok, result.failure_text()
    for report in result.sessions:
        assert report.divergence is None
        assert report.tool_results.equal == report.tool_results.total > 0


async def test_a_served_call_naming_the_recorded_workspace_names_the_live_one(
    upstream: Path, tmp_path: Path
) -> None:
    """The recorded model wrote to an absolute path under its own workspace: live, the same
    file is written in the live workspace (and the result names it there)."""

    def edit(lines: list[str]) -> None:
        _literal_cwd(lines)
        relative, absolute = '\\"file_path\\": \\"notes.txt\\"', f'\\"file_path\\": \\"{LITERAL}/notes.txt\\"'
        lines[:] = [line.replace(relative, absolute) for line in lines]

    scenario = _edited_recording(upstream, tmp_path, "fs-write", edit)
    assert f"{LITERAL}/notes.txt" in (scenario / "session.jsonl").read_text()
    result = await run_scenario(scenario, "replay")
    assert result.ok, result.failure_text()
    assert result.sessions[0].tool_results.equal == 1
    assert not Path(LITERAL).exists()

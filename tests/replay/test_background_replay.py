"""Replays with background children: the notices and relays are part of the divergence check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dsh.snapshot import run_scenario
from tests.patience import patience


def _edited(upstream: Path, tmp_path: Path, name: str, log: str, old: str, new: str) -> Path:
    scenario = tmp_path / name
    shutil.copytree(upstream / name, scenario)
    path = scenario / log
    path.chmod(0o644)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return scenario


@pytest.mark.parametrize(
    ("name", "log", "old", "new", "what"),
    [
        (
            "subagent-continuable",
            "session.jsonl",
            "failed before it finished.",
            "finished and will do no further work unless you send it more.",
            "injected message subagent-settled",
        ),
        (
            "subagent-report",
            "session.jsonl",
            '"text":"CHILD_REPORT_OK"}],"source":{"kind":"subagent-report"',
            '"text":"OTHER"}],"source":{"kind":"subagent-report"',
            "injected message subagent-report",
        ),
        (
            "subagent-continuable",
            "session.1.jsonl",
            "Now reply with exactly SECOND_OK.",
            "Now reply.",
            "injected message coordinator",
        ),
    ],
)
async def test_a_notice_or_relay_unlike_the_recording_fails(
    upstream: Path, tmp_path: Path, name: str, log: str, old: str, new: str, what: str
) -> None:
    edited = _edited(upstream, tmp_path, name, log, old, new)
    result = await run_scenario(edited, "replay", step_timeout=patience(30))
    assert not result.ok
    assert f"{what} differs from the recording" in result.failure_text()

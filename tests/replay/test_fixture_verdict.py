"""``dsh_recording`` passes only on the replay verdict the scenario runner applies
(``dsh.replay.verdict``): a recording whose hook run or approval the test's code skips fails
the test at teardown, as the divergence-check decision requires (harness actions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh import jsonx
from dsh.errors import ReplayError
from dsh.snapshot.fixture import Recording
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response
from tests.scenario_recipes import reply

PROMPT = "Summarize in two words: dsh is an agent harness"


def _summary(req: RecordedRequest) -> Response:
    return reply("agent harness")


async def _drive(recording: Recording) -> str:
    agent = await recording.agent()
    result = await agent.run_turn(PROMPT)
    return result.text


@pytest.fixture
async def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scenario the fixture recorded against the local test server (one turn, no hooks)."""
    directory = tmp_path / "summary"
    with OpenAICompatServer(handler=_summary) as server:
        monkeypatch.setenv("DSH_API_KEY", "sk-test")
        monkeypatch.setenv("DSH_BASE_URL", server.base_url)
        recording = Recording(directory, "record")
        assert await _drive(recording) == "agent harness"
        assert await recording.finish(passed=True)
    monkeypatch.delenv("DSH_API_KEY")
    monkeypatch.delenv("DSH_BASE_URL")
    return directory


def _append_recorded(directory: Path, etype: str, data: dict[str, object]) -> None:
    """Add a harness action at the end of the recorded primary log (the next seq)."""
    log = directory / "session.jsonl"
    lines = log.read_bytes().splitlines()
    last = jsonx.loads(lines[-1])
    event = {"type": etype, "seq": last["seq"] + 1, "time": last["time"], "data": data}
    log.write_bytes(b"\n".join([*lines, jsonx.dumps(event)]) + b"\n")


async def test_an_unchanged_replay_passes_the_verdict(scenario: Path) -> None:
    recording = Recording(scenario, "replay")
    assert await _drive(recording) == "agent harness"
    assert await recording.finish(passed=True) == []


@pytest.mark.parametrize(
    ("etype", "data", "shown"),
    [
        ("hook/invoked", {"turn": 1, "point": "Stop", "dialect": "claude-code", "handlerId": "h1"}, "Stop"),
        ("approval/asked", {"id": "a1", "toolName": "bash", "callId": "c1"}, "approval/asked"),
    ],
)
async def test_a_recorded_harness_action_the_test_skips_fails_it(
    scenario: Path, etype: str, data: dict[str, object], shown: str
) -> None:
    _append_recorded(scenario, etype, data)
    recording = Recording(scenario, "replay")
    assert await _drive(recording) == "agent harness"  # the model-visible history is the same
    with pytest.raises(ReplayError) as caught:
        await recording.finish(passed=True)
    text = str(caught.value)
    assert "hooks and approvals must act as recorded" in text
    assert shown in text and "the live run did nothing" in text

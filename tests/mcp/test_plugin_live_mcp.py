"""The pytest plugin's scenario items and MCP: ``--dsh-snapshot=record`` starts the workspace's
``.mcp.json`` server and records its call; a replay serves the call from the recording and starts
no server; ``--dsh-live-mcp`` starts the server and calls it for real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer
from tests.replay.test_fixture import _run

from .conftest import KEY, adding, calc_entry, copy_calc, write_config

INI = "[pytest]\ndsh_snapshot_paths = scenarios\ndsh_snapshot_trust = true\n"
STEPS = {"steps": [{"op": "initialize"}, {"op": "newSession"}, {"op": "prompt", "text": "add 2 and 3"}]}


def test_a_replayed_scenario_serves_mcp_from_the_recording_unless_dsh_live_mcp(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(pytester.path)
    calls, starts = root / "calls.txt", root / "starts.txt"
    scenario = root / "scenarios" / "mcp-add"
    (scenario / "workspace").mkdir(parents=True)
    (scenario / "input.json").write_text(json.dumps(STEPS))
    write_config(
        scenario / "workspace" / ".mcp.json", calc=calc_entry(copy_calc(root / "servers"), calls, starts)
    )
    pytester.makefile(".ini", pytest=INI)
    with OpenAICompatServer(handler=adding) as model:
        env = {"DSH_API_KEY": KEY, "DSH_BASE_URL": model.base_url}
        recorded = _run(pytester, monkeypatch, env, "--dsh-snapshot=record")
        assert len(model.requests) == 2
    recorded.assert_outcomes(passed=1)
    assert (scenario / "session.jsonl").is_file()
    assert '"mcp__calc__add"' in (scenario / "session.jsonl").read_text()
    assert len(starts.read_text().splitlines()) == 1 and calls.read_text() == "2+3\n"

    replayed = _run(pytester, monkeypatch, {})  # keyless, the model server gone
    replayed.assert_outcomes(passed=1)
    assert len(starts.read_text().splitlines()) == 1, "a replay starts no MCP server"
    assert calls.read_text() == "2+3\n"

    live = _run(pytester, monkeypatch, {}, "--dsh-live-mcp")
    live.assert_outcomes(passed=1)
    assert len(starts.read_text().splitlines()) == 2, "--dsh-live-mcp started the server"
    assert calls.read_text() == "2+3\n2+3\n", "--dsh-live-mcp called it for real"

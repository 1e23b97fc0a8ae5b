"""Issue #41 item 4 in the pytest plugin: ``--dsh-until TURN`` continues each scenario live from
its turn TURN — the recorded turns kept keylessly, the later prompts asked of the configured
provider — stores the branch and reports where it diverged."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from dsh.store.url import open_store
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.cli.test_replay_live_cli import _record
from tests.replay.test_fixture import _run

INI = "[pytest]\ndsh_snapshot_paths = scenarios\ndsh_snapshot_trust = true\n"
PROMPTS = ("first question", "second question", "third question")
STEPS = {"steps": [{"op": "prompt", "text": t} for t in PROMPTS]}


def test_dsh_until_1_continues_a_scenario_live_and_stores_the_branch(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(pytester.path)
    scenario = root / "scenarios" / "three-turns"
    scenario.mkdir(parents=True)
    recorded = asyncio.run(_record(scenario))
    (scenario / "input.json").write_text(json.dumps(STEPS))
    pytester.makefile(".ini", pytest=INI)
    store = f"sqlite:{root / 'live.db'}"
    with OpenAICompatServer(handler=lambda r: stream_reply(text=f"live: {r.prompt}")) as server:
        env = {"DSH_BASE_URL": server.base_url, "DSH_MODEL": "live-model", "DSH_STORE": store}
        done = _run(pytester, monkeypatch, env, "--dsh-until=1")
        assert [r.prompt for r in server.requests] == ["second question", "third question"]
        assert server.requests[0].json["model"] == "live-model"
    done.assert_outcomes(passed=1)
    out = done.stdout.str()
    assert "dsh: scenarios continued live (--dsh-until)" in out
    assert "three-turns: turns 1–1 recorded, 2–3 live with live-model -> branch " in out
    assert "diverged at turn 2: recorded 'two', live 'live: second question'" in out

    async def branches() -> list[tuple[str | None, int]]:
        s = open_store(store)
        try:
            return [(c.header.parent_session, c.inherited_event_count) for c in await s.children(recorded)]
        finally:
            await s.close()

    ((parent, cut),) = asyncio.run(branches())
    assert parent == recorded and cut > 0

    without_key = _run(pytester, monkeypatch, {"DSH_BASE_URL": "https://api.example.com"}, "--dsh-until=1")
    without_key.assert_outcomes(failed=1)
    assert "no API key" in without_key.stdout.str() and "Traceback" not in without_key.stdout.str()

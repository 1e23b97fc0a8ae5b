"""Children started from code (``agent.spawn()`` / ``agent.fork()``) in a real session, saved
with ``dsh scenario save``: the scenario starts them with ``spawnChild`` / ``forkChild`` steps,
prompts them with ``prompt {child}``, and replays strictly with the server gone."""

from __future__ import annotations

import json
from pathlib import Path

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store import SqliteEventStore
from dsh.subagents import standard_tools
from dsh.testing.server import OpenAICompatServer
from tests.replay.test_fixture import _library_children
from tests.replay.test_recording import _dsh
from tests.scenario_recipes import MODEL


async def test_save_of_a_session_with_children_started_from_code_replays_strictly(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    db = tmp_path / "sessions.db"
    async with OpenAICompatServer(handler=_library_children) as server:
        store = SqliteEventStore(db)
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        agent = await Agent.create(
            store, model=model, tools=standard_tools(), config=AgentConfig(model=MODEL, retry=NO_DELAY),
            cwd=workspace,
        )  # fmt: skip
        assert (await agent.run_turn("Remember: the codeword is ZINNIA. Reply OK.")).text == "OK"
        spawned = await agent.spawn()
        assert (await spawned.run_turn("Say CHILD_OK.")).text == "CHILD_OK"
        forked = await agent.fork()
        assert (await forked.run_turn("What is the codeword?")).text == "ZINNIA"
        assert (await agent.run_turn("Say PARENT_DONE.")).text == "PARENT_DONE"
        await model.aclose()
        await store.close()
    scenario = tmp_path / "saved"
    done = _dsh("scenario", "save", agent.id, str(scenario), "--workspace", str(workspace),
                "--store", f"sqlite:{db}")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in scenario.glob("session*.jsonl")) == [
        "session.1.jsonl", "session.2.jsonl", "session.jsonl"
    ]  # fmt: skip
    steps = json.loads((scenario / "input.json").read_text())["steps"]
    assert steps == [
        {"op": "newSession"},
        {"op": "prompt", "text": "Remember: the codeword is ZINNIA. Reply OK."},
        {"op": "spawnChild"},
        {"op": "prompt", "text": "Say CHILD_OK.", "child": 1},
        {"op": "forkChild"},
        {"op": "prompt", "text": "What is the codeword?", "child": 2},
        {"op": "prompt", "text": "Say PARENT_DONE."},
    ]
    replayed = _dsh("scenario", "replay", str(scenario), "--json", "--trust")
    assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr
    report = json.loads(replayed.stdout.splitlines()[-1])
    assert report["ok"] is True
    assert sorted(s["kind"] for s in report["sessions"]) == ["fork", "primary", "spawn"]
    calls = {s["kind"]: s["calls"] for s in report["sessions"]}
    assert calls == {"primary": 2, "spawn": 1, "fork": 1}
    for session in report["sessions"]:
        assert session["divergence"] is None and session["consumed"] == session["calls"]

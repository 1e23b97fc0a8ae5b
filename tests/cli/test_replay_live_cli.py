"""Issue #41 item 4: ``dsh replay DIR --until TURN --live`` keeps the recording up to TURN,
asks the configured provider for the later turns, and stores the result as a branch."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from dsh import Agent, AgentConfig, MemoryEventStore, ScriptedModel
from dsh.model.scripted import text_reply
from dsh.store.logfile import encode_log
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply


async def _record(directory: Path) -> str:
    store = MemoryEventStore()
    model = ScriptedModel([text_reply("one"), text_reply("two"), text_reply("three")], model="rec-model")
    async with await Agent.create(
        store, model=model, config=AgentConfig(model="rec-model"), cwd=directory
    ) as a:
        for prompt in ("first question", "second question", "third question"):
            await a.run_turn(prompt)
        (directory / "session.jsonl").write_bytes(encode_log(await store.load(a.id)))
        return a.id


def dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"NO_COLOR": "1", "PYTHONUTF8": "1", "DSH_STORE": f"sqlite:{tmp_path / 's.db'}"})
    env["TMPDIR"] = str(tmp_path)  # the live branch's fresh workspace is made there
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_replay_until_1_live_stores_a_branch_and_says_where_it_diverged(tmp_path: Path) -> None:
    scenario = tmp_path / "rec"
    scenario.mkdir()
    recorded = asyncio.run(_record(scenario))
    with OpenAICompatServer(handler=lambda r: stream_reply(text=f"live: {r.prompt}")) as server:
        done = dsh(tmp_path, "replay", str(scenario), "--until", "1", "--live", "--base-url", server.base_url,
                   "--model", "live-model", "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["recording"] == recorded and out["liveTurns"] == [2, 3]
        assert out["divergence"] == {"turn": 2, "recorded": "two", "live": "live: second question"}
        # turn 1 came from the recording: the provider saw it as history, was asked only turns 2 and 3
        assert [r.prompt for r in server.requests] == ["second question", "third question"]
        assert server.requests[0].json["model"] == "live-model"
        assert "one" in [m.get("content") for m in server.requests[0].messages]
    tree = json.loads(dsh(tmp_path, "sessions", "tree", recorded, "--json").stdout)
    (branch,) = tree["children"]
    assert branch["id"] == out["branch"] and branch["kind"] == "fork" and branch["branchTurn"] == 1
    bad = dsh(tmp_path, "replay", str(scenario), "--until", "1")
    assert bad.returncode == 2 and "--live" in bad.stderr

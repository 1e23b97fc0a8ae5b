"""A session continued across processes (``dsh run`` then ``dsh run --resume``), with a spawn
and a fork child in the second turn, saved with ``dsh scenario save``: the saved scenario
replays strictly with the server gone — the replay reproduces the recording's events (what
the resumed process logged at its first turn), not what one process playing both prompts logs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response
from tests.scenario_recipes import call, last_user, reply, tool_results

KEY = "sk-test-resumed-0123456789"


def _dsh(*args: str, cwd: Path, store: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "DSH_STORE": store, "NO_COLOR": "1", **env},
        cwd=cwd,
    )


def _handler(req: RecordedRequest) -> Response:
    text = last_user(req)
    done = tool_results(req)
    if "Say CHILD_OK" in text:
        return reply("CHILD_OK")
    if "What is the codeword" in text:
        return reply("ZINNIA")
    if "Remember" in text:
        return reply("OK")
    if not done:
        return call("call_spawn", "subagent", {"description": "child", "prompt": "Say CHILD_OK."})
    if len(done) == 1:
        recall = {"description": "recall", "prompt": "What is the codeword?"}
        return call("call_fork", "subagent_fork", recall)
    return reply("PARENT_DONE")


def test_a_session_resumed_in_a_second_process_saves_and_replays_strictly(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n")
    store = f"sqlite:{tmp_path / 'sessions.db'}"
    with OpenAICompatServer(handler=_handler) as server:
        common = ("--json", "--base-url", server.base_url, "--model", "deepseek-chat")
        first = _dsh("run", "Remember: the codeword is ZINNIA. Reply OK.", *common, cwd=work, store=store,
                     DSH_API_KEY=KEY)  # fmt: skip
        assert first.returncode == 0, first.stderr
        sid = json.loads(first.stdout.splitlines()[-1])["sessionId"]
        second = _dsh("run", "Delegate now.", "--resume", sid, *common, cwd=work, store=store,
                      DSH_API_KEY=KEY)  # fmt: skip
        assert second.returncode == 0, second.stderr
        assert json.loads(second.stdout.splitlines()[-1])["text"] == "PARENT_DONE"
    scenario = tmp_path / "saved"
    saved = _dsh("scenario", "save", sid, str(scenario), "--workspace", str(work), cwd=tmp_path, store=store)
    assert saved.returncode == 0, saved.stderr
    assert sorted(p.name for p in scenario.glob("session*.jsonl")) == [
        "session.1.jsonl", "session.2.jsonl", "session.jsonl"
    ]  # fmt: skip
    # the server is gone: the replay is keyless (into the store that holds the recorded ids:
    # fresh ids, said once)
    replayed = _dsh(
        "scenario", "replay", str(scenario), "--json", "--trust", "--store", store, cwd=tmp_path, store=store
    )
    assert replayed.stderr.count("already in the target store") == 1, replayed.stderr
    assert replayed.returncode == 0, replayed.stdout[-4000:] + replayed.stderr
    report = json.loads(replayed.stdout.splitlines()[-1])
    assert report["ok"] is True
    assert sorted(s["kind"] for s in report["sessions"]) == ["fork", "primary", "spawn"]
    for session in report["sessions"]:
        assert session["divergence"] is None and session["consumed"] == session["calls"]
        assert session["toolResults"]["equal"] == session["toolResults"]["total"]
    steps = json.loads((scenario / "input.json").read_text())["steps"]
    assert [s["op"] for s in steps] == ["newSession", "prompt", "resumeSession", "prompt"]
    assert _replayed_event_types(scenario) == _recorded_event_types(scenario)


def _types(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines[1:]:
        row = json.loads(line)
        out.extend([row["type"]] * (len(row["dt"]) + 1 if "dt" in row else 1))
    return out


def _recorded_event_types(scenario: Path) -> dict[str, list[str]]:
    """The recorded types less the workspace checkpoints ``dsh run`` took (a replay takes none)."""
    return {
        p.name: [t for t in _types(p.read_text().splitlines()) if t != "workspace/checkpoint"]
        for p in sorted(scenario.glob("session*.jsonl"))
    }


def _replayed_event_types(scenario: Path) -> dict[str, list[str]]:
    """The event types of each session a replay into a fresh store logged, by recorded file."""
    import asyncio

    from dsh.snapshot import run_scenario
    from dsh.snapshot.recording import scenario_logs
    from dsh.store.memory import MemoryEventStore

    async def go() -> dict[str, list[str]]:
        store = MemoryEventStore()
        result = await run_scenario(scenario, "replay", store=store)
        assert result.ok, result.failure_text()
        sessions = {s.header.id: await store.load(s.header.id) for s in await store.list_sessions()}
        files = scenario_logs(sessions, result.sessions[0].live_id or "", "")
        return {name: _types(data.decode().splitlines()) for name, data in sorted(files.items())}

    return asyncio.run(go())

"""Recording you can trust: a failed record writes nothing, ``once``, ``dsh scenario save``,
``--factory`` — all against the local OpenAI-compatible test server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.snapshot import run_scenario
from dsh.store import SqliteEventStore
from dsh.subagents import standard_tools
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, http_error
from tests.scenario_recipes import MODEL, RECIPES, SNAPSHOTS, call, last_user, reply, tool_results


def _dsh(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **(env or {})},
        cwd=cwd,
    )


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def test_a_failed_record_leaves_the_recording_byte_identical(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "text-turn", tmp_path)
    before = _snapshot(scenario)
    with OpenAICompatServer(handler=lambda _req: http_error(401, "invalid api key")) as server:
        env = {"DSH_API_KEY": "sk-bad", "DSH_BASE_URL": server.base_url}
        done = _dsh("scenario", "record", str(scenario), env=env)
        assert server.requests, "the record went over HTTP"
        kept = _dsh("scenario", "record", str(scenario), "--keep-failed", env=env)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert "AUTH" in line and "nothing was written" in line and "text-turn" in line
    assert "sk-bad" not in done.stderr + done.stdout
    assert _snapshot(scenario) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["text-turn", "text-turn.failed"]
    assert kept.returncode == 1 and "text-turn.failed" in kept.stderr
    assert "AUTH" in (tmp_path / "text-turn.failed" / "session.jsonl").read_text()


async def test_a_record_that_cannot_start_leaves_no_trace(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "text-turn", tmp_path)
    before = _snapshot(scenario)
    done = _dsh("scenario", "record", str(scenario))  # no key at all
    assert done.returncode == 2 and "no API key" in done.stderr
    assert _snapshot(scenario) == before


async def test_once_records_a_missing_scenario_then_replays_it_keylessly(tmp_path: Path) -> None:
    recipe = RECIPES["tool-call-turn"]
    scenario = tmp_path / "fresh"
    scenario.mkdir()
    (scenario / "input.json").write_text(json.dumps(recipe.input_json()))
    async with OpenAICompatServer(handler=recipe.handler) as server:
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        try:
            first = await run_scenario(scenario, "once", record_model=model, model_name=MODEL)
        finally:
            await model.aclose()
    assert first.ok and first.mode == "record", first.failure_text()
    # the first record keeps the recording's redaction salt in input.json (with the logs, one step)
    assert first.changed == ["input.json", "session.jsonl", "transcript.expected.jsonl"]
    assert json.loads((scenario / "input.json").read_text())["replay"]["salt"]
    # the server is stopped now: the second run must be keyless
    second = await run_scenario(scenario, "once")
    assert second.ok and second.mode == "replay", second.failure_text()
    assert second.sessions[0].tool_results.equal == second.sessions[0].tool_results.total == 1
    again = await run_scenario(scenario, "refresh")
    assert again.ok and again.changed == []


def _family_handler(req: RecordedRequest) -> Response:
    """A parent that spawns a child (which spawns a grandchild) and then forks."""
    text = last_user(req)
    done = tool_results(req)
    if "GRANDCHILD" in text:
        return reply("GRAND_OK")
    if "Spawn a grandchild" in text:
        if done:
            return reply("CHILD_OK")
        return call("call_grand", "subagent", {"description": "grandchild", "prompt": "Say GRANDCHILD_OK."})
    if "codeword" in text and "Remember" not in text:
        return reply("ZINNIA")
    if "Remember" in text:
        return reply("OK")
    if not done:
        return call(
            "call_child",
            "subagent",
            {"description": "child", "prompt": "Spawn a grandchild, then say CHILD_OK."},
        )
    if len(done) == 1:
        return call(
            "call_fork", "subagent_fork", {"description": "recall", "prompt": "What is the codeword?"}
        )
    return reply("PARENT_DONE")


async def test_save_turns_a_live_run_with_its_descendants_into_a_strict_scenario(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    db = tmp_path / "sessions.db"
    async with OpenAICompatServer(handler=_family_handler) as server:
        store = SqliteEventStore(db)
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        agent = await Agent.create(
            store,
            model=model,
            tools=standard_tools(),
            config=AgentConfig(model=MODEL, retry=NO_DELAY),
            cwd=workspace,
        )
        assert (await agent.run_turn("Remember: the codeword is ZINNIA. Reply OK.")).text == "OK"
        assert (await agent.run_turn("Delegate now.")).text == "PARENT_DONE"
        await model.aclose()
        await store.close()
    scenario = tmp_path / "saved"
    done = _dsh(
        "scenario",
        "save",
        agent.id[:36],
        str(scenario),
        "--workspace",
        str(workspace),
        "--store",
        f"sqlite:{db}",
    )
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in scenario.iterdir())
    assert names == ["input.json", "session.1.jsonl", "session.2.jsonl", "session.3.jsonl", "session.jsonl",
                     "transcript.expected.jsonl", "workspace"]  # fmt: skip
    steps = json.loads((scenario / "input.json").read_text())["steps"]
    assert [s["op"] for s in steps] == ["newSession", "prompt", "prompt"]
    replayed = _dsh("scenario", "replay", str(scenario), "--json", "--trust")
    assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr
    report = json.loads(replayed.stdout.splitlines()[-1])
    assert report["ok"] is True
    kinds = sorted(s["kind"] for s in report["sessions"])
    assert kinds == ["fork", "primary", "spawn", "spawn"]
    for session in report["sessions"]:
        assert session["divergence"] is None and session["consumed"] == session["calls"]
        assert session["toolResults"]["equal"] == session["toolResults"]["total"]
    again = _dsh("scenario", "save", agent.id, str(scenario), "--store", f"sqlite:{db}")
    assert again.returncode == 1 and "--force" in again.stderr


FACTORY = """
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.subagents import standard_tools
from dsh.tools.schema import ToolArgs
from dsh import Tool, ToolOutput


class CityArgs(ToolArgs):
    city: str


class Weather(Tool[CityArgs]):
    name = "get_weather"
    description = "Current weather in a city."
    args_model = CityArgs

    async def call(self, args, ctx):
        return ToolOutput.text(f"{args.city}: 3C")


async def make(setup):
    tools = standard_tools()
    tools.register(Weather())
    return await Agent.create(setup.store, model=setup.model, tools=tools,
                              config=AgentConfig(model=setup.model_name, retry=NO_DELAY),
                              cwd=setup.cwd, feed=setup.feed)
"""


def _weather(req: RecordedRequest) -> Response:
    if tool_results(req):
        return reply("It is 3C in Oslo.")
    return call("call_w", "get_weather", {"city": "Oslo"})


def test_a_custom_tool_scenario_replays_through_the_factory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "myfactory.py").write_text(FACTORY)
    scenario = project / "weather"
    scenario.mkdir()
    steps: list[dict[str, Any]] = [{"op": "newSession"}, {"op": "prompt", "text": "Weather in Oslo?"}]
    (scenario / "input.json").write_text(json.dumps({"steps": steps}))
    with OpenAICompatServer(handler=_weather) as server:
        env = {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url}
        recorded = _dsh(
            "scenario", "record", str(scenario), "--factory", "myfactory:make", env=env, cwd=project
        )
    assert recorded.returncode == 0, recorded.stderr
    assert "changed input.json, session.jsonl, transcript.expected.jsonl" in recorded.stdout
    plain = _dsh("scenario", "replay", str(scenario), "--trust", cwd=project)
    assert plain.returncode == 1  # the standard agent has no get_weather: the check says so
    assert "get_weather" in plain.stdout
    flagged = _dsh("scenario", "replay", str(scenario), "--trust", "--factory", "myfactory:make", cwd=project)
    assert flagged.returncode == 0, flagged.stdout[-2000:]
    (project / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ndsh_snapshot_factory = "myfactory:make"\n'
    )
    from_ini = _dsh("scenario", "replay", str(scenario), "--trust", cwd=project)
    assert from_ini.returncode == 0, from_ini.stdout[-2000:]
    alias = _dsh("replay", str(scenario), "--trust", cwd=project)
    assert alias.returncode == 0


@pytest.mark.parametrize("spec", ["nocolon", "missing_module_xyz:make", "json:nothing_here"])
def test_a_bad_factory_is_one_line(tmp_path: Path, spec: str) -> None:
    done = _dsh("scenario", "replay", str(SNAPSHOTS / "text-turn"), "--factory", spec)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and spec.split(":")[0] in done.stderr


async def test_a_turn_a_hook_blocked_is_recorded(upstream: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "blocked"
    scenario.mkdir()
    shutil.copytree(upstream / "hook-cc-promptsubmit-block" / "workspace", scenario / "workspace")
    shutil.copy(upstream / "hook-cc-promptsubmit-block" / "input.json", scenario / "input.json")
    async with OpenAICompatServer(handler=lambda _req: reply("never asked")) as server:
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        try:
            result = await run_scenario(scenario, "record", record_model=model, model_name=MODEL)
        finally:
            await model.aclose()
        assert not server.requests  # the hook refused the prompt before any model call
    assert result.ok, result.failure_text()
    assert "session.jsonl" in result.changed
    assert '"kind":"blocked"' in (scenario / "session.jsonl").read_text()
    assert (await run_scenario(scenario, "replay")).ok


REORDERING = """
from dsh.loop import Agent, AgentConfig, NO_DELAY
from dsh.subagents import standard_tools
from dsh.tools.registry import ToolRegistry
from dsh.tools.schema import ToolArgs
from dsh import Tool, ToolOutput

FLIP = FLIPS  # True: the tool list comes out reversed once a tool ran (an unstable order)
flipped = [False]


class CityArgs(ToolArgs):
    city: str


class Weather(Tool[CityArgs]):
    name = "get_weather"
    description = "Current weather in a city."
    args_model = CityArgs

    async def call(self, args, ctx):
        flipped[0] = FLIP
        return ToolOutput.text(f"{args.city}: 3C")


class Unstable(ToolRegistry):  # specs() follows names()
    def names(self):
        return list(reversed(super().names())) if flipped[0] else super().names()


async def make(setup):
    flipped[0] = False
    tools = Unstable()
    for name in standard_tools().names():
        tools.register(standard_tools().get(name))
    tools.register(Weather())
    return await Agent.create(setup.store, model=setup.model, tools=tools,
                              config=AgentConfig(model=setup.model_name, retry=NO_DELAY),
                              cwd=setup.cwd, feed=setup.feed)
"""


def test_a_rerecord_whose_tools_reorder_fails_at_tools_and_passes_with_cache_warn(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "myfactory.py").write_text(REORDERING.replace("FLIPS", "False"))
    scenario = project / "weather"
    scenario.mkdir()
    steps: list[dict[str, Any]] = [{"op": "newSession"}, {"op": "prompt", "text": "Weather in Oslo?"}]
    (scenario / "input.json").write_text(json.dumps({"steps": steps}))
    record = ("scenario", "record", str(scenario), "--factory", "myfactory:make")
    with OpenAICompatServer(handler=_weather) as server:
        env = {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url}
        first = _dsh(*record, env=env, cwd=project)
        assert first.returncode == 0, first.stderr
        committed = _snapshot(scenario)
        (project / "myfactory.py").write_text(REORDERING.replace("FLIPS", "True"))
        again = _dsh(*record, env=env, cwd=project)
        assert again.returncode == 1, again.stdout
        assert "the cache prefix broke at: tools (reordered: " in again.stderr, again.stderr
        assert "call 2 (turn 1 step 2)" in again.stderr and "shared bytes " in again.stderr
        assert _snapshot(scenario) == committed, "nothing was written"
        warned = _dsh(*record, "--cache", "warn", env=env, cwd=project)
        assert warned.returncode == 0, warned.stderr
        assert "warning: the cache prefix broke at: tools" in warned.stderr
        assert _snapshot(scenario) != committed
        bad = _dsh(*record, "--cache", "sometimes", env=env, cwd=project)
    assert bad.returncode == 2 and "--cache 'sometimes' is not one of fail, warn, off" in bad.stderr


def test_a_recording_that_rewrites_its_prefix_fails_its_replay_unless_input_json_accepts_it(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "myfactory.py").write_text(REORDERING.replace("FLIPS", "True"))
    scenario = project / "weather"
    scenario.mkdir()
    steps: list[dict[str, Any]] = [{"op": "newSession"}, {"op": "prompt", "text": "Weather in Oslo?"}]
    (scenario / "input.json").write_text(json.dumps({"steps": steps}))
    with OpenAICompatServer(handler=_weather) as server:
        env = {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url}
        first = _dsh("scenario", "record", str(scenario), "--factory", "myfactory:make", env=env, cwd=project)
    assert first.returncode == 0, first.stderr  # nothing committed before: nothing dropped
    replay = ("replay", str(scenario), "--trust", "--factory", "myfactory:make")
    flagged = _dsh(*replay, "--cache", cwd=project)
    assert flagged.returncode == 1, flagged.stdout[-2000:]
    assert "the cache prefix broke at: tools (reordered: " in flagged.stdout
    assert 'accept it in input.json: "cache": {"accept": ["tools"]}' in flagged.stdout
    rows = [line.split() for line in flagged.stdout.splitlines() if line.startswith("  2 ")]
    assert rows and rows[0][1] == "1.2" and "⚠" in rows[0], "the --cache table names the request"
    document = json.loads((scenario / "input.json").read_text())
    (scenario / "input.json").write_text(json.dumps({**document, "cache": {"accept": ["tools"]}}))
    accepted = _dsh(*replay, "--json", cwd=project)
    assert accepted.returncode == 0, accepted.stdout[-2000:]
    requests = json.loads(accepted.stdout)["cache"]
    assert [r["flagged"] for r in requests] == [False, True] and requests[1]["brokeAt"].startswith("tools")
    spend = json.loads(accepted.stdout)["spend"]  # the replay report carries the run's usage and cost
    assert spend["calls"] == 2 and spend["tokens"]["inputTokens"] > 0 and "usd" in spend["cost"]


def test_the_pytest_plugin_fails_a_scenario_whose_recording_rewrites_its_prefix_unless_accepted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Path(pytester.path)
    (project / "myfactory.py").write_text(REORDERING.replace("FLIPS", "True"))
    scenario = project / "scenarios" / "weather"
    scenario.mkdir(parents=True)
    steps: list[dict[str, Any]] = [{"op": "newSession"}, {"op": "prompt", "text": "Weather in Oslo?"}]
    (scenario / "input.json").write_text(json.dumps({"steps": steps}))
    with OpenAICompatServer(handler=_weather) as server:
        env = {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url}
        made = _dsh("scenario", "record", str(scenario), "--factory", "myfactory:make", env=env, cwd=project)
    assert made.returncode == 0, made.stderr
    pytester.makeini(
        "[pytest]\ndsh_snapshot_paths = scenarios\ndsh_snapshot_factory = myfactory:make\n"
        "dsh_snapshot_trust = true\n"
    )
    for key in [k for k in os.environ if k.startswith(("DSH_", "DEEPSEEK_"))]:
        monkeypatch.delenv(key)
    failed = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    failed.assert_outcomes(failed=1)
    out = failed.stdout.str()
    assert "the cache prefix broke at: tools (reordered: " in out
    assert 'accept it in input.json: "cache": {"accept": ["tools"]}' in out
    warned = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--dsh-cache=warn", timeout=120)
    warned.assert_outcomes(passed=1)
    assert "the cache prefix broke at: tools" in warned.stdout.str()
    (scenario / "input.json").write_text(json.dumps({"steps": steps, "cache": {"accept": ["tools"]}}))
    pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120).assert_outcomes(passed=1)

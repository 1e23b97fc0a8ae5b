"""The divergence check goes red when the live run differs from its recording — and only then.

Each test edits a copy of a real recording (the original's, or a bundled one of ours) so
that it no longer matches what dsh does, then shows the replay fails naming exactly what
differs; the same edit passes with the matching declared rule (``ignore`` / ``scrub``) and
with ``drift="warn"``, where it is listed as tolerated.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.snapshot import run_scenario
from tests.scenario_recipes import SNAPSHOTS


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def _edit_log(path: Path, etype: str, edit: Any) -> None:
    """Apply ``edit(data)`` to the ``data`` of the first event of ``etype`` in a log file."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines[1:], start=1):
        event = json.loads(line)
        if event["type"] == etype:
            edit(event["data"])
            lines[i] = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
            break
    else:
        raise AssertionError(f"no {etype} event in {path}")
    path.write_text("\n".join(lines) + "\n")


def _declare(scenario: Path, rules: dict[str, Any]) -> None:
    doc = json.loads((scenario / "input.json").read_text())
    doc["replay"] = rules
    (scenario / "input.json").write_text(json.dumps(doc))


def _change_result(data: dict[str, Any]) -> None:
    data["message"]["content"][0]["content"][0]["text"] = "SNAPSHOT_CHANGED\n"


@pytest.fixture
def changed_result(upstream: Path, tmp_path: Path) -> Path:
    scenario = _copy(upstream / "tool-call-turn", tmp_path)
    _edit_log(scenario / "session.jsonl", "tool/result", _change_result)
    return scenario


CALL = "call_00_Rn2Mz1y8uZN62ukEXiNO2077"


async def test_a_changed_recorded_tool_result_fails_naming_the_call(changed_result: Path) -> None:
    result = await run_scenario(changed_result, "replay")
    assert not result.ok
    first = result.problems[0]
    assert f"the tool result of call {CALL} (bash) differs from the recording" in first
    assert "-      SNAPSHOT_CHANGED" in first and "+      SNAPSHOT_OK" in first  # recorded vs live
    report = result.sessions[0]
    assert report.tool_results.to_json() == {"equal": 0, "total": 1}
    assert report.divergence is not None and report.divergence.call == 2
    assert (report.divergence.turn, report.divergence.step) == (1, 2)


async def test_a_changed_tool_result_passes_with_a_scrub_rule(changed_result: Path) -> None:
    _declare(changed_result, {"scrub": {"SNAPSHOT_[A-Z]+": "SNAPSHOT_X"}})
    result = await run_scenario(changed_result, "replay")
    assert result.ok, result.failure_text()
    [tolerated] = result.sessions[0].tolerated
    assert tolerated.tolerated_by == "scrub" and CALL in tolerated.what


async def test_a_changed_tool_result_passes_with_an_ignore_rule(changed_result: Path) -> None:
    _declare(changed_result, {"ignore": ["bash"]})
    result = await run_scenario(changed_result, "replay")
    assert result.ok, result.failure_text()
    assert [t.tolerated_by for t in result.sessions[0].tolerated] == ["ignore bash"]


async def test_a_changed_tool_result_passes_with_drift_warn(changed_result: Path) -> None:
    result = await run_scenario(changed_result, "replay", drift="warn")
    assert result.ok, result.failure_text()
    [tolerated] = result.sessions[0].tolerated
    assert tolerated.tolerated_by == "--drift=warn"
    assert result.sessions[0].tool_results.to_json() == {"equal": 0, "total": 1}  # still counted


def _change_system(data: dict[str, Any]) -> None:
    data["header"]["system"] = "You are a pirate. Never call tools."


async def test_a_changed_recorded_system_prompt_fails_naming_the_system_prompt(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "text-turn", tmp_path)
    _edit_log(scenario / "session.jsonl", "request/header", _change_system)
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    assert (
        "diverged at call 1 (turn 1 step 1): the system prompt differs from the recording"
        in result.problems[0]
    )
    assert "-You are a pirate" in result.problems[0].replace('"', "")
    _declare(scenario, {"ignore": ["system"]})
    assert (await run_scenario(scenario, "replay")).ok
    _declare(scenario, {})
    assert (await run_scenario(scenario, "replay", drift="warn")).ok


def _change_schema(data: dict[str, Any]) -> None:
    bash = next(t for t in data["header"]["tools"] if t["name"] == "bash")
    bash["parameters"]["properties"]["command"]["description"] = "something else"


async def test_a_changed_recorded_tool_schema_fails_naming_the_tool(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "tool-call-turn", tmp_path)
    _edit_log(scenario / "session.jsonl", "request/header", _change_schema)
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    assert "the schema of tool bash differs from the recording" in result.problems[0]
    for rules in ({"ignore": ["bash"]}, {"ignore": ["tools"]}):
        _declare(scenario, rules)
        passed = await run_scenario(scenario, "replay")
        assert passed.ok, (rules, passed.failure_text())
    _declare(scenario, {})
    assert (await run_scenario(scenario, "replay", drift="warn")).ok


async def test_a_tool_dsh_does_not_have_is_a_divergence(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "tool-call-turn", tmp_path)
    log = scenario / "session.jsonl"
    log.write_text(log.read_text().replace('"name":"bash","arguments', '"name":"lsp","arguments'))
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    assert "the tool result of call call_bash_1 (lsp) differs" in result.problems[0]
    assert '+      Error: unknown tool "lsp"' in result.problems[0]


@pytest.mark.parametrize("rules", [{"scrub": "x"}, {"ignore": "system"}, {"scrub": {"(": "x"}}, {"other": 1}])
async def test_a_malformed_replay_declaration_is_one_line(tmp_path: Path, rules: dict[str, Any]) -> None:
    from dsh.errors import ScenarioError

    scenario = _copy(SNAPSHOTS / "text-turn", tmp_path)
    _declare(scenario, rules)
    with pytest.raises(ScenarioError) as info:
        await run_scenario(scenario, "replay")
    assert "text-turn" in str(info.value) and "\n" not in str(info.value)


def _dsh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_dsh_replay_json_reports_what_was_checked(changed_result: Path) -> None:
    strict = _dsh("replay", str(changed_result), "--json")
    assert strict.returncode == 1
    report = json.loads(strict.stdout.splitlines()[-1])
    assert report["ok"] is False
    [session] = report["sessions"]
    assert session["toolResults"] == {"equal": 0, "total": 1}
    assert session["divergence"]["call"] == 2 and CALL in session["divergence"]["what"]
    assert "SNAPSHOT_CHANGED" in session["divergence"]["recorded"]
    assert "SNAPSHOT_OK" in session["divergence"]["live"]
    assert session["notReproduced"] == []  # the runtime-context snapshot is compared too
    warned = _dsh("replay", str(changed_result), "--json", "--drift=warn")
    assert warned.returncode == 0, warned.stdout + warned.stderr
    report = json.loads(warned.stdout.splitlines()[-1])
    assert report["ok"] is True and report["sessions"][0]["tolerated"][0]["toleratedBy"] == "--drift=warn"
    bad = _dsh("replay", str(changed_result), "--drift=loose")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def _without_fallback_notice(stderr: str) -> list[str]:
    """``stderr``'s lines but the one saying bash runs under Landlock (a host where bubblewrap
    is not usable, ``dsh.tools.sandbox``)."""
    return [line for line in stderr.strip().splitlines() if "bubblewrap is not usable here" not in line]


def test_replay_names_the_commands_it_will_run_unless_trusted(upstream: Path) -> None:
    scenario = upstream / "tool-call-turn"
    warned = _dsh("replay", str(scenario), "--json")
    assert warned.returncode == 0, warned.stderr
    [line] = _without_fallback_notice(warned.stderr)
    assert "runs 1 recorded command(s) on this machine, confined by the kernel sandbox under " in line
    assert "under workspace-write (writes only in the workspace and temp dirs, network off)" in line
    assert "unconfined" not in line and "echo" in line
    assert "--trust" in line
    trusted = _dsh("replay", str(scenario), "--json", "--trust")
    assert trusted.returncode == 0 and _without_fallback_notice(trusted.stderr) == []
    hooked = _dsh("replay", str(upstream / "hook-cc-pretool-deny"), "--json")
    assert "hook: " in hooked.stderr.strip().splitlines()[0]


async def test_a_full_override_replaces_the_script_before_derivation(upstream: Path, tmp_path: Path) -> None:
    from dsh.errors import ReplayError

    scenario = _copy(upstream / "text-turn", tmp_path)
    log = scenario / "session.jsonl"
    finish = '"chunk":{"type":"finish","reason":{"kind":"stop"}}'
    assert finish in log.read_text()  # the recorded call loses its finish: it cannot be served as is
    log.write_text(log.read_text().replace(finish, '"chunk":{"type":"usage","usage":{"inputTokens":1}}'))
    with pytest.raises(ReplayError, match=r"needs a replay\.override\.json"):
        await run_scenario(scenario, "replay")
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "PONG"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "PONG"}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    (scenario / "replay.override.json").write_text(json.dumps([{"kind": "chunks", "chunks": chunks}]))
    result = await run_scenario(scenario, "replay")
    assert result.ok, result.failure_text()
    assert result.sessions[0].final_text == "PONG" and result.sessions[0].consumed == 1


def test_dsh_replay_writes_an_html_report_of_the_divergence(changed_result: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    done = _dsh("replay", str(changed_result), "--trust", "--html", str(report))
    assert done.returncode == 1
    page = report.read_text()
    assert "SNAPSHOT_CHANGED" in page and "SNAPSHOT_OK" in page and "<script" not in page


async def test_a_tool_result_no_later_call_saw_still_fails_the_replay(upstream: Path, tmp_path: Path) -> None:
    """After a cancel no model call follows the aborted results: the per-session count catches them."""
    scenario = _copy(upstream / "cancel-tool-calls", tmp_path)
    log = scenario / "session.jsonl"
    log.write_text(
        log.read_text().replace("Error: tool call aborted before dispatch", "Error: something else")
    )
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    assert result.sessions[0].tool_results.to_json() == {"equal": 1, "total": 2}
    assert "1 of 2 tool result(s) differ from the recording (call_skipped)" in result.failure_text()

"""Errors that say what is true (issue 35, item 11): a scenario directory that does not exist,
a damaged JSONL log, and the pytest plugin's skip reason when no key is set."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from dsh.snapshot import ScenarioSkipped, run_scenario
from tests.cli.conftest import Dsh

SCENARIOS = Path(__file__).parents[2] / "src/dsh/snapshot/scenarios"


@pytest.mark.parametrize("kind", ["missing", "file", "empty"])
def test_a_bad_scenario_directory_is_exit_2_for_replay_and_acp_replay(kind: str, tmp_path: Path) -> None:
    target = tmp_path / "scenario"
    if kind == "file":
        target.write_text("not a directory\n")
    elif kind == "empty":
        target.mkdir()
    dsh = Dsh("memory:", tmp_path)
    replay, acp = dsh("replay", target), dsh("acp", "--replay", target)
    for r in (replay, acp):
        assert r.code == 2, (r.args, r.stderr)
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    expected = {
        "missing": f"scenario directory {target} does not exist",
        "file": f"scenario {target} is not a directory",
        "empty": "input.json is missing",
    }[kind]
    assert expected in replay.stderr
    if kind != "empty":  # an ACP replay needs only the recording: it names session.jsonl instead
        assert expected in acp.stderr
    assert "input.json" not in replay.stderr or kind == "empty"


@pytest.mark.parametrize("line", [1, 4])
def test_dsh_log_of_a_damaged_jsonl_session_says_it_is_damaged_and_where(line: int, tmp_path: Path) -> None:
    url = f"jsonl:{tmp_path / 'store'}"
    dsh = Dsh(url, tmp_path)
    dsh("replay", SCENARIOS / "text-turn", "--store", url).ok()
    (log,) = (tmp_path / "store").glob("*.jsonl")
    lines = log.read_text().splitlines(keepends=True)
    lines[line - 1] = "{garbage\n"
    log.write_text("".join(lines))
    sid = log.name.removesuffix(".jsonl")
    for typed in (sid[:8], sid):
        r = dsh("log", typed)
        assert r.code == 1, r.stderr
        error = r.stderr.splitlines()[-1]
        assert error.startswith(f"dsh: error: session '{typed}': its log is damaged: "), error
        assert f"{log}, line {line}:" in error, error
        assert "not found" not in r.stderr


def test_the_record_skip_reason_names_the_variables_not_a_cli_option(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith(("DSH_", "DEEPSEEK_"))]:
        monkeypatch.delenv(key)
    scenario = pytester.path / "recordings" / "text-turn"
    shutil.copytree(SCENARIOS / "text-turn", scenario)
    pytester.makepyfile(
        test_user=(
            "import pytest\n\n"
            "@pytest.mark.dsh_scenario('recordings/text-turn')\n"
            "def test_it(dsh_recording):\n"
            "    pass\n"
        )
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rs", "--dsh-snapshot=record", timeout=120
    )
    result.assert_outcomes(skipped=1)
    out = result.stdout.str()
    assert "DEEPSEEK_API_KEY" in out and "--api-key" not in out, out

    with pytest.raises(ScenarioSkipped) as skipped:  # the runner's own record path (library, plugin items)
        asyncio.run(run_scenario(scenario, "record"))
    assert "DEEPSEEK_API_KEY" in str(skipped.value) and "--api-key" not in str(skipped.value)

"""A real run whose bash printed secrets, saved with ``dsh scenario save``: no secret in any
file of the scenario, placeholders in their place, and a strict replay while the same values
are live; ``dsh scenario scan`` passes it and flags a planted key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.redact import PLACEHOLDER
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response
from tests.scenario_recipes import call, reply, tool_results

GITHUB = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
DEPLOY = "dpl-0f9e8d7c6b5a4f3e2d1c"
KEY = "sk-test-redaction-0123456789abcdef"
AWS = "AKIA" + "QWERTYUIOPASDFGH"


def _dsh(*args: str, cwd: Path, store: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "DSH_STORE": store, "NO_COLOR": "1", "DEPLOY_TOKEN": DEPLOY, **env},
        cwd=cwd,
    )


def _handler(req: RecordedRequest) -> Response:
    if not tool_results(req):
        command = 'cat creds.txt; echo "deploy=$DEPLOY_TOKEN"'
        return call("call_bash_1", "bash", {"command": command, "description": "Show the credentials"})
    return reply(f"The token is {GITHUB} (done).")  # streamed in 6-character deltas: split


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One real run saved as a scenario, shared by the tests (which only read it or copy it)."""
    tmp_path = tmp_path_factory.mktemp("saved")
    work = tmp_path / "work"
    work.mkdir()
    (work / "creds.txt").write_text(f"github={GITHUB}\n")
    store = f"sqlite:{tmp_path / 'sessions.db'}"
    with OpenAICompatServer(handler=_handler) as server:
        run = _dsh("run", "Show me the credentials.", "--json", "--base-url", server.base_url,
                   cwd=work, store=store, DSH_API_KEY=KEY)  # fmt: skip
        assert run.returncode == 0, run.stderr
    sid = json.loads(run.stdout.splitlines()[-1])["sessionId"]
    scenario = tmp_path / "saved"
    out = _dsh("scenario", "save", sid, str(scenario), "--workspace", str(work), cwd=tmp_path, store=store)
    assert out.returncode == 0, out.stderr
    return scenario, store


def _all_text(directory: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(directory.rglob("*")) if p.is_file())


def test_no_secret_reaches_any_file_of_a_saved_scenario(saved: tuple[Path, str]) -> None:
    scenario, _ = saved
    text = _all_text(scenario)
    for secret in (GITHUB, DEPLOY, GITHUB[:12]):
        assert secret not in text
    kinds = {m.group(1) for m in PLACEHOLDER.finditer(text)}
    assert {"github-token", "env"} <= kinds
    assert json.loads((scenario / "input.json").read_text())["replay"]["salt"]
    # the model's answer, streamed with the token split across deltas, is recut: the deltas
    # assemble exactly the redacted message (one placeholder, in the delta where it started)
    rows = [json.loads(line) for line in (scenario / "session.jsonl").read_text().splitlines()[1:]]
    answer = next(r["data"] for r in rows if r["type"] == "assistant/message" and "stream" in r["data"]
                  and r["data"]["message"]["content"][0]["type"] == "text")  # fmt: skip
    deltas = [c["text"] for c in answer["stream"]["chunks"] if c["type"] == "text-delta"]
    assert "".join(deltas) == answer["message"]["content"][0]["text"]
    assert sum("<secret:github-token:" in d for d in deltas) == 1


def test_the_saved_scenario_replays_strictly_with_the_same_values_live(saved: tuple[Path, str]) -> None:
    scenario, store = saved
    replayed = _dsh(
        "scenario", "replay", str(scenario), "--json", "--trust", cwd=scenario.parent, store=store
    )
    assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr
    report = json.loads(replayed.stdout.splitlines()[-1])
    assert report["ok"] is True
    for session in report["sessions"]:
        assert session["divergence"] is None and not session["tolerated"]
        assert session["toolResults"]["equal"] == session["toolResults"]["total"] == 1
    assert DEPLOY not in replayed.stdout + replayed.stderr


def test_a_different_live_value_is_a_divergence_that_prints_no_secret(saved: tuple[Path, str]) -> None:
    scenario, store = saved
    other = "dpl-another-live-value-77"
    replayed = _dsh("scenario", "replay", str(scenario), "--json", "--trust", cwd=scenario.parent,
                    store=store, DEPLOY_TOKEN=other)  # fmt: skip
    assert replayed.returncode == 1
    assert "toolResults" in replayed.stdout or "differ" in replayed.stdout + replayed.stderr
    assert other not in replayed.stdout + replayed.stderr


def test_scan_passes_the_saved_scenario_and_flags_a_planted_key(
    saved: tuple[Path, str], tmp_path: Path
) -> None:
    original, store = saved
    clean = _dsh("scenario", "scan", str(original), cwd=original.parent, store=store)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    scenario = tmp_path / "copy"
    shutil.copytree(original, scenario)
    planted = scenario / "workspace" / "notes.md"
    planted.write_text(f"first line\naws = {AWS}\n")
    found = _dsh("scenario", "scan", str(scenario), cwd=scenario.parent, store=store)
    assert found.returncode == 1
    assert f"{planted}:2: aws-access-key" in found.stdout
    assert AWS not in found.stdout + found.stderr


def test_no_redact_writes_verbatim_and_says_so(tmp_path: Path, saved: tuple[Path, str]) -> None:
    scenario, store = saved
    sid = json.loads((scenario / "session.jsonl").read_text().splitlines()[0])["id"]
    raw = tmp_path / "raw"
    out = _dsh("scenario", "save", sid, str(raw), "--no-redact", cwd=tmp_path, store=store)
    assert out.returncode == 0, out.stderr
    assert "--no-redact" in out.stderr and "verbatim" in out.stderr
    assert GITHUB in (raw / "session.jsonl").read_text()
    assert "salt" not in (raw / "input.json").read_text()


def test_a_bad_redact_regex_is_one_line(tmp_path: Path, saved: tuple[Path, str]) -> None:
    _, store = saved
    out = _dsh("scenario", "save", "x", str(tmp_path / "y"), "--redact", "(", cwd=tmp_path, store=store)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--redact" in out.stderr and "Traceback" not in out.stderr


def test_a_redact_regex_is_applied_kept_in_input_json_and_the_scenario_replays(
    tmp_path: Path, saved: tuple[Path, str]
) -> None:
    scenario, store = saved
    sid = json.loads((scenario / "session.jsonl").read_text().splitlines()[0])["id"]
    target, work = tmp_path / "custom", tmp_path / "work"
    work.mkdir()
    (work / "creds.txt").write_text(f"github={GITHUB}\n")  # the workspace as it was before the run
    out = _dsh("scenario", "save", sid, str(target), "--redact", "credentials", "--workspace", str(work),
               cwd=tmp_path, store=store)  # fmt: skip
    assert out.returncode == 0, out.stderr
    log = (target / "session.jsonl").read_text()
    assert "credentials" not in log and "<secret:custom:" in log
    assert json.loads((target / "input.json").read_text())["replay"]["redact"] == ["credentials"]
    replayed = _dsh("scenario", "replay", str(target), "--json", "--trust", cwd=tmp_path, store=store)
    assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr

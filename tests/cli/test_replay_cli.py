"""``dsh replay`` and ``dsh demo`` as real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from dsh.snapshot.runner import SCENARIOS


def dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("DSH_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_replay_json_reports_every_session(tmp_path: Path) -> None:
    out = dsh(tmp_path, "replay", str(SCENARIOS / "subagent-mixed"), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] is True and report["scenario"] == "subagent-mixed"
    kinds = [
        (s["kind"], s["inheritedEventCount"], s["calls"], s["consumed"], s["finalText"])
        for s in report["sessions"]
    ]
    assert kinds == [
        ("primary", 0, 4, 4, "PARENT_DONE"),
        ("spawn", 0, 1, 1, "ALPHA"),
        ("fork", 8, 1, 1, "SAFFRON"),
    ]
    assert all(s["recordedId"] and s["liveId"] for s in report["sessions"])


def test_replay_of_an_upstream_recording(upstream: Path, tmp_path: Path) -> None:
    out = dsh(tmp_path, "replay", str(upstream / "subagent-fork-in-process"), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [s["finalText"] for s in report["sessions"]] == ["PARENT_DONE", "MARMALADE"]


def test_replay_live_view_and_store(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'kept.db'}"
    out = dsh(tmp_path, "replay", str(SCENARIOS / "subagent-fork"), "--store", store)
    assert out.returncode == 0, out.stderr
    assert "MARMALADE" in out.stdout and "replay ok" in out.stdout and "fork" in out.stdout
    listed = dsh(tmp_path, "sessions", "list", "--json", "--store", store)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert sorted(r["isSeeded"] for r in rows) == [False, True]


def test_replay_mismatch_exits_non_zero(tmp_path: Path) -> None:
    scenario = tmp_path / "text-turn"
    shutil.copytree(SCENARIOS / "text-turn", scenario)
    path = scenario / "transcript.expected.jsonl"
    path.write_text(path.read_text().replace("PONG", "PING"))
    out = dsh(tmp_path, "replay", str(scenario), "--json")
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["ok"] is False and "PING" in report["diff"]


def test_replay_bad_directory_is_one_line(tmp_path: Path) -> None:
    out = dsh(tmp_path, "replay", str(tmp_path / "missing"))
    assert out.returncode == 2 and out.stderr.startswith("dsh: error:") and out.stderr.count("\n") == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    out = dsh(tmp_path, "replay", str(empty))
    assert out.returncode != 0 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1


def test_demo_replays_into_the_store_and_prints_the_tree(tmp_path: Path) -> None:
    out = dsh(tmp_path, "demo")
    assert out.returncode == 0, out.stderr
    assert "replay ok" in out.stdout
    assert "spawn" in out.stdout and "fork" in out.stdout and "cut 8" in out.stdout
    assert (tmp_path / "data" / "dsh" / "sessions.db").exists()


def test_replay_ignores_dsh_store_and_keeps_only_an_explicit_store(tmp_path: Path) -> None:
    """The help's contract: a temporary in-memory store unless ``--store`` is given —
    ``DSH_STORE`` (the user's real store) is not written by a replay."""
    real = tmp_path / "real.db"
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "DSH_STORE": f"sqlite:{real}",
    }
    argv = [sys.executable, "-m", "dsh.cli", "replay", str(SCENARIOS / "text-turn")]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert not real.exists(), "DSH_STORE is not the replay's store"
    assert not (tmp_path / "data").exists(), "nor is the default store"
    kept = tmp_path / "kept.db"
    out = subprocess.run(
        [*argv, "--store", f"sqlite:{kept}"], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert kept.exists() and not real.exists()
    helped = subprocess.run([*argv[:4], "--help"], env=env, capture_output=True, text=True, timeout=60)
    shown = " ".join(helped.stdout.split())
    assert "env var: DSH_STORE" not in shown and "embedded SQLite" not in shown, shown


def test_file_tool_results_read_as_text_in_the_live_view_and_the_log(upstream: Path, tmp_path: Path) -> None:
    """``read`` answers in the original's tagged shape (``<path>P</path><type>file</type>
    <content>…</content>``): the live view and ``dsh log`` show the path and the content, not
    the tags (one rule, ``dsh.cli.tables.readable_result``)."""
    store = f"sqlite:{tmp_path / 's.db'}"
    out = dsh(tmp_path, "replay", str(upstream / "fs-read"), "--trust", "--store", store)
    assert out.returncode == 0, out.stderr
    (result,) = [line for line in out.stdout.splitlines() if line.startswith("← ")]
    assert "<path>" not in result and "<content>" not in result, result
    assert result.startswith("← /") and "greeting.txt 1: hello" in result, result
    listed = dsh(tmp_path, "sessions", "list", "--json", "--store", store)
    sid = json.loads(listed.stdout)[0]["id"]
    log = dsh(tmp_path, "log", sid, "--store", store)
    assert log.returncode == 0, log.stderr
    (shown,) = [line for line in log.stdout.splitlines() if line.startswith("- ← ")]
    assert "<path>" not in shown and shown.endswith("greeting.txt (4 lines)"), shown


PROMPTS = (
    "› Remember this fact for later: the project codeword is SAFFRON. Reply with exactly OK and do not "
    "use any tools.",
    "› First use the subagent tool so a child says ALPHA, then use subagent_fork to ask for the codeword, "
    "then reply PARENT_DONE.",
)


def _turns_shown(stdout: str) -> None:
    lines = stdout.splitlines()
    first, second = (lines.index(p) for p in PROMPTS)
    assert lines[first + 1] == "OK", "the first answer follows its prompt"
    assert lines[second - 1] == "" and first < second - 2, "a blank line separates the turns"
    assert lines.index("PARENT_DONE") > second


def test_replay_and_demo_show_each_prompt_before_its_answer(tmp_path: Path) -> None:
    replayed = dsh(tmp_path, "replay", str(SCENARIOS / "subagent-mixed"))
    assert replayed.returncode == 0, replayed.stderr
    _turns_shown(replayed.stdout)
    demo = dsh(tmp_path, "demo", "--store", f"sqlite:{tmp_path / 'demo.db'}")  # what make run runs
    assert demo.returncode == 0, demo.stderr
    _turns_shown(demo.stdout)
    noticed = dsh(tmp_path, "replay", str(SCENARIOS / "subagent-background"))
    assert noticed.returncode == 0, noticed.stderr
    assert "STARTED\nNOTED\n" in noticed.stdout, "each step's answer on its own line"


def test_the_report_names_each_live_session_and_a_fork_childs_cut(tmp_path: Path) -> None:
    """A replay that diverges before its children start: each report line (and the HTML
    report) says which live session a script was bound to, or that none was started, never
    ``None``; a fork child's cut is the recording's (8) when it never ran, not 0."""
    scenario = tmp_path / "diverged"
    shutil.copytree(SCENARIOS / "subagent-mixed", scenario)
    steps = scenario / "input.json"
    steps.write_text(steps.read_text().replace("says ALPHA", "says BETA"))
    page = tmp_path / "report.html"
    out = dsh(tmp_path, "replay", str(scenario), "--html", str(page))
    assert out.returncode == 1, out.stderr
    lines = {line.split()[1]: line for line in out.stdout.splitlines() if line.startswith(("✓", "✗"))}
    assert set(lines) == {"primary", "spawn", "fork"}, out.stdout
    assert "None" not in "".join(lines.values()), lines
    assert "→ live c4ce30f3-b002-4165-8046-8e3bb850ad59 · cut 0" in lines["primary"]
    assert "→ live — (not started) · cut 0 ·" in lines["spawn"]
    assert "→ live — (not started) · cut 8 ·" in lines["fork"]
    html = page.read_text()
    assert html.count("→ live — (not started)") == 2 and "<p>cut 8 ·" in html, html

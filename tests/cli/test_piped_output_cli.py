"""Piped (not a terminal), ``dsh replay`` / ``dsh scenario replay`` / ``dsh demo`` never wrap a
line: ids, JSON arguments and report lines stay whole for CI logs and ``grep``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.snapshot.runner import SCENARIOS

SCENARIO = SCENARIOS / "subagent-mixed"
CALL = (
    '→ subagent {"description": "Say ALPHA", "prompt": "Reply with exactly the word ALPHA and nothing else."}'
)


def dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "XDG_DATA_HOME": str(tmp_path / "data"), "COLUMNS": "80"}
    env.pop("DSH_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _sessions(tmp_path: Path) -> list[dict[str, object]]:
    out = dsh(tmp_path, "replay", str(SCENARIO), "--json", "--trust")
    assert out.returncode == 0, out.stderr
    sessions: list[dict[str, object]] = json.loads(out.stdout.splitlines()[-1])["sessions"]
    return sessions


def _assert_whole(stdout: str, sessions: list[dict[str, object]]) -> None:
    lines = stdout.splitlines()
    assert CALL in lines, "the tool call's JSON arguments on one line"
    for s in sessions:
        whole = [line for line in lines if f"recorded {s['recordedId']}" in line]
        assert len(whole) == 1, stdout
        assert "→ live " in whole[0] and whole[0].endswith(repr(s["finalText"])), whole[0]


def test_replay_piped_is_never_wrapped(tmp_path: Path) -> None:
    sessions = _sessions(tmp_path)
    out = dsh(tmp_path, "replay", str(SCENARIO), "--trust")
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) > 80
    _assert_whole(out.stdout, sessions)


def test_scenario_replay_piped_is_never_wrapped(tmp_path: Path) -> None:
    sessions = _sessions(tmp_path)
    out = dsh(tmp_path, "scenario", "replay", str(SCENARIO), "--trust")
    assert out.returncode == 0, out.stderr
    _assert_whole(out.stdout, sessions)


def test_demo_piped_is_never_wrapped(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'demo.db'}"
    out = dsh(tmp_path, "demo", "--store", store)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert CALL in lines
    report = [line for line in lines if " recorded " in line and " → live " in line]
    assert len(report) == 3 and all(line.endswith("'") for line in report), out.stdout
    listed = dsh(tmp_path, "sessions", "list", "--json", "--store", store)
    for row in json.loads(listed.stdout):
        assert any(row["id"] in line for line in lines[lines.index(report[-1]) :]), row["id"]


def test_tables_carry_no_trailing_spaces(tmp_path: Path) -> None:
    """Rich pads every cell to its column's width; piped, a line ends at its last character."""
    store = f"sqlite:{tmp_path / 's.db'}"
    assert dsh(tmp_path, "replay", str(SCENARIO), "--trust", "--store", store).returncode == 0
    listed = dsh(tmp_path, "sessions", "list", "--json", "--store", store)
    root = next(r["id"] for r in json.loads(listed.stdout) if not r.get("parentSession"))
    exported = tmp_path / "root.jsonl"
    assert dsh(tmp_path, "sessions", "export", root, "-o", str(exported), "--store", store).returncode == 0
    for args in (
        ("sessions", "list"),
        ("sessions", "show", root),
        ("sessions", "show", root, "--events"),
        ("sessions", "tree", root),
        ("log", "inspect", str(exported)),
    ):
        out = dsh(tmp_path, *args, "--store", store) if args[0] == "sessions" else dsh(tmp_path, *args)
        assert out.returncode == 0, out.stderr
        padded = [line for line in out.stdout.splitlines() if line != line.rstrip()]
        assert not padded, f"dsh {' '.join(args[:2])}: {padded[:3]}"

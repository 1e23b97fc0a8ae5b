"""`make run`: the keyless demo writes to a demo store of its own, says where, never the user's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _make(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    stamp = tmp_path / "installed"  # newer than pyproject.toml: make reinstalls nothing
    stamp.touch()
    env = {**os.environ, "DSH_STORE": f"sqlite:{tmp_path / 'users-own.db'}", "HOME": str(tmp_path)}
    return subprocess.run(
        ["make", "-s", "-C", str(REPO), "run", f"VENV={sys.prefix}", f"STAMP={stamp}", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_make_run_replays_into_its_own_store_and_prints_where(tmp_path: Path) -> None:
    demo = f"sqlite:{tmp_path / 'demo' / 'sessions.db'}"
    done = _make(tmp_path, f"DEMO_STORE={demo}")
    assert done.returncode == 0, done.stderr
    assert f"make run: replaying into the demo store {demo}" in done.stdout
    assert f"sessions list --store '{demo}'" in done.stdout
    assert not (tmp_path / "users-own.db").exists(), "make run wrote to the user's DSH_STORE"
    listed = subprocess.run(
        [sys.executable, "-m", "dsh.cli", "sessions", "list", "--store", demo, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    sessions = json.loads(listed.stdout)
    assert len(sessions) == 3  # the subagent-mixed parent, its spawn and its fork child


def test_the_default_demo_store_lives_in_the_checkout_and_is_ignored_by_git(tmp_path: Path) -> None:
    planned = subprocess.run(
        ["make", "-n", "-C", str(REPO), "run", f"VENV={sys.prefix}", f"STAMP={tmp_path / 'stamp'}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert f"dsh demo --store 'sqlite:{REPO}/.demo/sessions.db'" in planned.stdout, planned.stdout
    assert ".demo/" in (REPO / ".gitignore").read_text().splitlines()

"""``dsh sandbox``: which kernel sandbox confines bash here, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.tools.landlock import landlock_failure
from dsh.tools.sandbox import bwrap_failure


def _sandbox(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", "sandbox", *args],
        env={**clean, **env}, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_it_names_the_backend_that_confines_here(tmp_path: Path) -> None:
    done = _sandbox(tmp_path, "--json")
    report = json.loads(done.stdout)
    want = "bubblewrap" if bwrap_failure() is None else "landlock" if landlock_failure() is None else None
    assert report["confinedBy"] == want
    assert report["bubblewrap"]["usable"] is (bwrap_failure() is None)
    assert report["landlock"]["usable"] is (landlock_failure() is None)
    assert report["landlock"]["abi"] >= (1 if landlock_failure() is None else 0)
    assert done.returncode == (0 if want else 1)
    text = _sandbox(tmp_path)
    assert text.stdout.splitlines()[-1] == (
        f"bash under read-only / workspace-write runs confined by {want}"
        if want
        else f"bash under read-only / workspace-write is refused here: {report['failure']}"
    )


def test_a_named_runner_that_cannot_start_exits_1_with_the_reason(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-bwrap")
    done = _sandbox(tmp_path, "--json", DSH_BWRAP=missing)
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert report["confinedBy"] is None and report["failure"] == f"Error: spawn {missing} ENOENT"
    text = _sandbox(tmp_path, DSH_BWRAP=missing)
    assert text.returncode == 1
    assert f"refused here: Error: spawn {missing} ENOENT" in text.stdout


def test_a_bad_backend_name_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    shown = _sandbox(tmp_path, DSH_SANDBOX_BACKEND="bwrapp")
    want = "dsh: error: DSH_SANDBOX_BACKEND='bwrapp': expected one of auto, bubblewrap, landlock"
    assert (shown.returncode, shown.stderr.strip(), shown.stdout) == (2, want, "")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    run = subprocess.run(
        [sys.executable, "-m", "dsh.cli", "run", "hi", "--base-url", "http://127.0.0.1:9/v1"],
        env={**clean, "DSH_SANDBOX_BACKEND": "bwrapp"}, cwd=tmp_path, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert (run.returncode, run.stderr.strip()) == (2, want)  # refused before any model call

"""Which kernel sandbox confines ``bash``: bubblewrap where it builds a sandbox, else Landlock
(the original's order); a runner named explicitly never falls back; neither ⇒ the refusal.
What each backend refuses is in test_escapes.py (run against both)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsh.errors import ToolError
from dsh.tools import landlock, sandbox
from dsh.tools.sandbox import SandboxPolicy, confine, runner_failure

NO_BWRAP = "Error: spawn bwrap ENOENT"


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """bubblewrap cannot build a sandbox here (as in a container without user namespaces)."""
    monkeypatch.delenv("DSH_BWRAP", raising=False)
    monkeypatch.setattr(sandbox, "_probe", lambda program: NO_BWRAP)


def test_without_bubblewrap_landlock_confines(no_bwrap: None, tmp_path: Path) -> None:
    if landlock.landlock_failure() is not None:
        pytest.skip(f"Landlock does not confine on this host ({landlock.landlock_failure()})")
    argv = confine(SandboxPolicy(), ["bash", "-c", "true"], tmp_path, tmp_path)
    assert argv[:3] == [sys.executable, "-I", str(landlock.RUNNER)]
    assert argv[argv.index("--") :] == ["--", "bash", "-c", "true"]
    assert ["--write", str(tmp_path.resolve())] == argv[3:5]
    assert runner_failure(SandboxPolicy(), tmp_path) is None


def test_neither_backend_refuses_with_both_reasons(
    no_bwrap: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        sandbox, "landlock_failure", lambda: "landlock-run: Landlock is not enforced by this kernel"
    )
    with pytest.raises(ToolError) as caught:
        confine(SandboxPolicy(), ["true"], tmp_path, tmp_path)
    assert str(caught.value).endswith(
        "Runner failure: Error: spawn bwrap ENOENT; landlock-run: Landlock is not enforced by this kernel"
    )


def test_a_named_bubblewrap_never_falls_back(no_bwrap: None, tmp_path: Path) -> None:
    for policy in (SandboxPolicy(backend="bubblewrap"), SandboxPolicy(runner=".my-runner")):
        with pytest.raises(ToolError, match=f"Runner failure: {NO_BWRAP}$"):
            confine(policy, ["true"], tmp_path, tmp_path)


def test_dsh_bwrap_names_the_runner(no_bwrap: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSH_BWRAP", str(tmp_path / "missing-bwrap"))
    assert runner_failure(SandboxPolicy(), tmp_path) == NO_BWRAP  # the refusal, not Landlock


def test_landlock_only_when_asked(tmp_path: Path) -> None:
    if landlock.landlock_failure() is not None:
        pytest.skip(f"Landlock does not confine on this host ({landlock.landlock_failure()})")
    argv = confine(SandboxPolicy(backend="landlock", network=True), ["true"], tmp_path, tmp_path)
    assert argv[2] == str(landlock.RUNNER) and "--net" in argv


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus", "--", "true"], "landlock-run: unknown option --bogus"),
        (["--"], "landlock-run: no command given"),
    ],
)
def test_the_runner_fails_with_125_before_running_anything(args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-I", str(landlock.RUNNER), *args], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 125 and done.stderr.startswith(message)

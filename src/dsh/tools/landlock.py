"""The Landlock backend of the ``bash`` sandbox, from dsh's side: the runner's argv and whether
it confines here. The runner itself is :mod:`dsh.tools.landlock_run`, run as a script."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from dsh.tools.sandbox import SandboxPolicy

RUNNER: Final = Path(__file__).with_name("landlock_run.py")
PROBE_TIMEOUT_S: Final = 10.0


def landlock_argv(policy: SandboxPolicy, workspace: Path, argv: list[str]) -> list[str]:
    """``argv`` run by the Landlock runner under ``policy`` (``python -I``: no environment
    variable reaches the interpreter; the command gets the environment it was given)."""
    options: list[str] = []
    for root in policy.writable_roots(workspace):
        if root.is_dir():
            options += ["--write", str(root)]
    for hidden in policy.hidden_paths:
        if hidden.exists():
            options += ["--hide", str(hidden)]
    for protected in policy.read_only_inside(workspace):
        options += ["--read-only", str(protected)]
    for temp in policy.temp_roots if policy.mode != "read-only" else ():
        if temp.is_dir():
            options += ["--temp", str(temp)]
    if policy.network:
        options.append("--net")
    return [sys.executable, "-I", str(RUNNER), *options, "--", *argv]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: not enforced here, or the runner cannot start)."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(RUNNER), "--abi"], capture_output=True, text=True,
            timeout=PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return 0
    text = done.stdout.strip()
    return int(text) if done.returncode == 0 and text.isdigit() else 0


@functools.cache
def landlock_failure() -> str | None:
    """``None`` when the Landlock runner confines a command here, else why not (checked once
    per process)."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(RUNNER), "--", "true"],
            capture_output=True, timeout=PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"landlock-run: {exc}"
    if done.returncode == 0:
        return None
    text = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return text[0] if text else f"landlock-run exited with code {done.returncode}"

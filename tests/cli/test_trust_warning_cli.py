"""The trust warning of a replay says what is true: the policy the recorded commands run
under, computed from the policy the replay runs them with (never "unconfined" while they run
confined)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.replay.files import read_recorded
from dsh.replay.permissions import replay_policy, untrusted_warning
from dsh.snapshot.runner import SCENARIOS
from dsh.tools.sandbox import SandboxPolicy
from tests.conftest import UPSTREAM


def _replay(tmp_path: Path, directory: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("DSH_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", "replay", str(directory)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("directory", "mode"),
    [
        (SCENARIOS / "tool-call-turn", "workspace-write"),
        (UPSTREAM / "bash-spill", "workspace-write"),
        (UPSTREAM / "missing-sandbox-runner", "read-only"),
    ],
    ids=["ours", "the-originals-danger-full-access", "read-only"],
)
def test_the_warning_names_the_policy_the_commands_run_under(
    tmp_path: Path, directory: Path, mode: str
) -> None:
    if not directory.is_dir():
        pytest.skip(f"upstream fixtures not found at {UPSTREAM} (CI always has them)")
    out = _replay(tmp_path, directory)
    (warning,) = [line for line in out.stderr.splitlines() if "recorded command(s)" in line]
    assert "unconfined" not in warning, warning
    assert f"confined by the kernel sandbox under {mode}" in warning, warning
    policy = replay_policy(directory, read_recorded(directory).primary).sandbox
    assert policy is not None and policy.mode == mode


def test_the_text_follows_the_policy_object() -> None:
    directory = SCENARIOS / "tool-call-turn"
    assert "unconfined" in (untrusted_warning(directory, None) or "")
    full = untrusted_warning(directory, SandboxPolicy(mode="danger-full-access"))
    assert full is not None and "unconfined (danger-full-access)" in full
    online = untrusted_warning(directory, SandboxPolicy(mode="workspace-write", network=True))
    assert online is not None and "network on" in online
    offline = untrusted_warning(directory, SandboxPolicy(mode="workspace-write"))
    assert offline is not None and "network off" in offline

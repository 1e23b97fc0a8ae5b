"""Fixtures for the tools tests: a workspace with an outside neighbour, contexts, the registry."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from dsh.events.messages import Block
from dsh.tools import ToolContext, ToolOutput, ToolRegistry, builtin_registry
from tests.patience import patience


def make_ctx(cwd: Path, *, allow_outside: bool = False) -> ToolContext:
    return ToolContext(session_id="s-test", call_id="call-1", cwd=cwd, allow_outside_workspace=allow_outside)


def text_of(output: ToolOutput) -> str:
    blocks: list[Block] = output.content
    assert [b["type"] for b in blocks] == ["text"]
    return str(blocks[0]["text"])


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_dead(pid: int, timeout: float = 20.0) -> bool:
    """Whether ``pid`` dies within the hang guard ``patience(timeout)`` (a process the test
    expects to outlive it sleeps far longer)."""
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.02)
    return not process_alive(pid)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """``tmp_path/ws`` is the workspace; ``tmp_path/outside`` sits next to it with a secret."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    return ws


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return make_ctx(workspace)


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    return builtin_registry(bash_default_timeout_ms=10_000, spill_dir=tmp_path / "spill")

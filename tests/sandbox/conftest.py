"""Fixtures for the sandbox tests: a workspace and an outside dir away from the temp roots, contexts."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pytest

from dsh.events.messages import Block
from dsh.tools import ToolContext, ToolOutput, ToolRegistry, builtin_registry
from dsh.tools.landlock import landlock_failure
from dsh.tools.sandbox import SandboxBackend, SandboxPolicy, _probe, bwrap_failure, default_temp_roots


def text_of(output: ToolOutput) -> str:
    blocks: list[Block] = output.content
    return "".join(str(b.get("text", "")) for b in blocks)


BACKEND_FAILURES: dict[str, Callable[[], str | None]] = {
    "bubblewrap": bwrap_failure,
    "landlock": landlock_failure,
}


@pytest.fixture(params=sorted(BACKEND_FAILURES))
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    """Each kernel sandbox in turn (skipped, with the reason, where it cannot confine)."""
    name = cast(SandboxBackend, request.param)
    failure = BACKEND_FAILURES[name]()
    if failure is not None:
        pytest.skip(f"{name} cannot confine on this host ({failure})")
    return name


requires_bwrap = pytest.mark.skipif(
    bwrap_failure() is not None,
    reason=f"bubblewrap cannot build a sandbox on this host ({bwrap_failure()}); `make test` installs "
    "it with apt-get when missing",
)


def _base_dir() -> Path | None:
    """A writable dir outside every temp root (so "outside the workspace" really is unwritable)."""
    temp = default_temp_roots()
    for candidate in ("/var/tmp", os.path.expanduser("~")):
        real = Path(os.path.realpath(candidate))
        if real.is_dir() and os.access(real, os.W_OK) and not any(real.is_relative_to(t) for t in temp):
            return real
    return None


@pytest.fixture
def base() -> Iterator[Path]:
    """``base/ws`` is the workspace, ``base/outside`` its neighbour (same file system)."""
    root = _base_dir()
    if root is None:
        pytest.skip("no writable directory outside the temp roots to stand for 'outside the workspace'")
    made = Path(tempfile.mkdtemp(prefix="dsh-sandbox-test-", dir=root))
    (made / "ws").mkdir()
    (made / "outside").mkdir()
    (made / "outside" / "target.txt").write_text("original\n")
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def missing_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``DSH_BWRAP`` pointing at a runner that does not exist (the runner probe re-run)."""
    runner = str(tmp_path / ".dsh-missing-sandbox-runner")
    monkeypatch.setenv("DSH_BWRAP", runner)
    _probe.cache_clear()
    yield runner
    _probe.cache_clear()


@pytest.fixture
def registry() -> ToolRegistry:
    return builtin_registry(max_inline_bytes=None)


def make_ctx(cwd: Path, policy: SandboxPolicy | None) -> ToolContext:
    return ToolContext(session_id="s-sandbox", call_id="call-1", cwd=cwd, sandbox=policy)


async def bash(registry: ToolRegistry, ctx: ToolContext, command: str) -> ToolOutput:
    return await registry.call("bash", json.dumps({"command": command, "description": "sandbox test"}), ctx)

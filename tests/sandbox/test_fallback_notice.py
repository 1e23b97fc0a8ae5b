"""``dsh run`` says once on stderr when bash falls back to Landlock because bubblewrap is not
usable (issue 46, item 6b) — and says nothing when Landlock was chosen or nothing is confined.

bubblewrap is made unusable through ``PATH``: a ``bwrap`` that fails like one without user
namespaces (found on ``PATH``, so not a runner named with ``DSH_BWRAP``, which never falls
back), or a ``PATH`` that has ``bash`` but no ``bwrap`` at all. The model asks for two
``bash`` calls in one run: the notice comes once per process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from dsh.tools.landlock import landlock_failure

NOTICE = "bubblewrap is not usable here"
FAKE_FAILURE = "bwrap: No permissions to create a new namespace"

pytestmark = pytest.mark.skipif(
    landlock_failure() is not None, reason=f"Landlock does not confine on this host ({landlock_failure()})"
)


def _handler(req: RecordedRequest) -> Response:
    done = sum(1 for m in req.messages if m.get("role") == "tool")
    if done < 2:
        arguments = json.dumps({"command": f"echo ran-{done}", "description": "say"})
        return stream_reply(tool_calls=[WireToolCall.split(f"c{done}", "bash", arguments, 2)])
    return stream_reply(text=["done"])


def _fake_bwrap(directory: Path) -> None:
    fake = directory / "bwrap"
    fake.write_text(f"#!/bin/sh\necho '{FAKE_FAILURE}' >&2\nexit 1\n")
    fake.chmod(0o755)


def _bin_without_bwrap(directory: Path) -> None:
    for name in ("bash", "sh", "true", "env", "git"):
        found = shutil.which(name)
        if found is not None:
            (directory / name).symlink_to(found)


def _run(tmp_path: Path, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    base.update(
        {"DSH_STORE": f"jsonl:{tmp_path / 'store'}", "PATH": path, "DEEPSEEK_API_KEY": "sk-test-0000", **env}
    )
    with OpenAICompatServer(handler=_handler) as server:
        done = subprocess.run(
            [sys.executable, "-m", "dsh.cli", "run", "Say.", "--base-url", server.base_url, "--model", "m"],
            env=base, cwd=ws, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        results = [m for r in server.requests for m in r.messages if m.get("role") == "tool"]
    assert done.returncode == 0, done.stderr
    assert "ran-0" in str(results) and "ran-1" in str(results), done.stderr  # both calls ran
    return done


def _notices(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if NOTICE in line]


def test_an_unusable_bwrap_on_path_is_said_once(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    _fake_bwrap(fake)
    done = _run(tmp_path, f"{fake}:{os.environ['PATH']}", DSH_SANDBOX="workspace-write")
    lines = _notices(done.stderr)
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("dsh: ") and FAKE_FAILURE in lines[0] and "Landlock" in lines[0]


def test_a_missing_bwrap_is_said_once(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    _bin_without_bwrap(bare)
    done = _run(tmp_path, str(bare), DSH_SANDBOX="workspace-write")
    lines = _notices(done.stderr)
    assert len(lines) == 1, done.stderr
    assert "ENOENT" in lines[0] and "Landlock" in lines[0]


@pytest.mark.parametrize(
    "env",
    [
        {"DSH_SANDBOX": "workspace-write", "DSH_SANDBOX_BACKEND": "landlock"},
        {"DSH_SANDBOX": "danger-full-access"},
    ],
    ids=["landlock-chosen", "danger-full-access"],
)
def test_no_notice_when_landlock_was_chosen_or_nothing_is_confined(
    tmp_path: Path, env: dict[str, str]
) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    _fake_bwrap(fake)
    done = _run(tmp_path, f"{fake}:{os.environ['PATH']}", **env)
    assert _notices(done.stderr) == [], done.stderr

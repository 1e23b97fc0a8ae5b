"""``dsh run --sandbox`` / ``--network`` (or ``$DSH_SANDBOX`` / ``$DSH_NETWORK``): bad values are
usage errors (exit 2) before anything runs; a good one is the session's logged policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dsh.cli.app import app
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--sandbox", "full"],
            "--sandbox full: expected one of read-only, workspace-write, danger-full-access",
        ),
        (["--network", "maybe"], "--network maybe: expected on or off"),
    ],
)
def test_bad_sandbox_flags_are_usage_errors(tmp_path: Path, flags: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["run", "hi", "--cwd", str(tmp_path), *flags])
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DSH_SANDBOX": "full"}, "$DSH_SANDBOX=full: expected one of read-only, workspace-write"),
        ({"DSH_NETWORK": "maybe"}, "$DSH_NETWORK=maybe: expected on or off"),
    ],
)
def test_bad_sandbox_settings_in_the_environment_are_named_as_such(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    result = CliRunner().invoke(app, ["run", "hi", "--cwd", str(tmp_path)], env=env)
    assert result.exit_code == 2
    assert message in result.output


def _write_once(request: RecordedRequest) -> Response:
    if any(m.get("role") == "tool" for m in request.messages):
        return stream_reply(text="done")
    args = json.dumps({"file_path": "made.txt", "content": "x"})
    return stream_reply(tool_calls=[WireToolCall.split("call_w", "write", args, 2)])


def _run_writing(tmp_path: Path, *flags: str, **env: str) -> tuple[list[str], str]:
    """``dsh run`` whose model writes made.txt: the ``sandbox/mode`` logged and the tool result."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    store = tmp_path / "s.db"
    with OpenAICompatServer(handler=_write_once) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "dsh.cli", "run", "write it", "--cwd", str(workspace), "--json",
             "--base-url", server.base_url, "--store", f"sqlite:{store}", *flags],
            env={**os.environ, "NO_COLOR": "1", **env},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        tool_messages = [m for r in server.requests for m in r.messages if m.get("role") == "tool"]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    modes = [e["data"]["mode"] for e in lines if e.get("type") == "sandbox/mode"]
    return modes, str(tool_messages[0]["content"])


def test_the_sandbox_can_be_configured_in_the_environment_and_a_flag_overrides_it(tmp_path: Path) -> None:
    modes, result = _run_writing(tmp_path, DSH_SANDBOX="read-only")
    assert modes == ["read-only"]
    assert "file access denied under read-only mode" in result
    assert not (tmp_path / "ws" / "made.txt").exists()

    modes, result = _run_writing(tmp_path, "--sandbox", "workspace-write", DSH_SANDBOX="read-only")
    assert modes == ["workspace-write"]
    assert (tmp_path / "ws" / "made.txt").read_text() == "x"

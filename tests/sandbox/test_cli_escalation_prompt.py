"""The escalation prompt shows what is approved, whole: the command (wrapped, never cut), the
directory it runs in, the permissions asked for and the justification; ``--json`` carries
them whole in an ``approval`` line. Through a real pseudo-terminal and piped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from tests.cli.test_chat_cli import Terminal

COLUMNS = 60
WHY = (
    "the build output lives in a directory the sandbox does not let me write, and the user asked "
    "for a clean rebuild of every target before the release tomorrow morning"
)


def _command(out: Path) -> str:
    steps = [f"cd {out}", "make -j4 clean all PREFIX=/opt/tools/very/long/prefix/for/the/release"]
    steps += ["tar -czf release-artifacts-2026-12-02.tar.gz dist/", "rm -rf build-output-that-must-go"]
    return " && ".join(steps)


def _escalating(command: str) -> Any:
    def handler(req: RecordedRequest) -> Response:
        if any(m.get("role") == "tool" for m in req.messages):
            return stream_reply(text="finished")
        args = {
            "command": command,
            "description": "rebuild",
            "workdir": "sub",
            "sandbox_permissions": "danger-full-access",
            "justification": WHY,
        }
        return stream_reply(tool_calls=[WireToolCall.split("call_0", "bash", json.dumps(args), 3)])

    return handler


def _env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DEEPSEEK_API_KEY", "DSH_BASE_URL", "DSH_MODEL")}
    env.update({"DSH_STORE": f"sqlite:{base / 's.db'}", "NO_COLOR": "1", "PYTHONUTF8": "1"})
    return env


def _squeezed(text: str) -> str:
    return "".join(text.split())


def test_the_terminal_prompt_shows_the_whole_command_directory_permissions_and_why(base: Path) -> None:
    ws = base / "ws"
    (ws / "sub").mkdir()
    command = _command(base / "outside")
    assert len(command) > 3 * COLUMNS
    with OpenAICompatServer(handler=_escalating(command)) as server:
        args = ["run", "go", "--cwd", str(ws), "--base-url", server.base_url]
        term = Terminal(args, _env(base), base, columns=COLUMNS)
        term.expect("→ bash")
        prompt = term.expect("allow? [o]nce / [s]ession / [r]eject")
        prompt = prompt[prompt.index("dsh: bash asks for approval") :]
        term.send("r\n")
        code = term.wait()
    assert code == 0
    body = prompt[: prompt.index("allow? [o]nce")]
    lines = body.replace("\r", "").splitlines()
    assert all(len(line) <= COLUMNS for line in lines), "wrapped to the terminal's width"
    assert "…" not in body, "never cut"
    assert _squeezed(command) in _squeezed(body), body
    assert _squeezed(WHY) in _squeezed(body)
    assert str(ws / "sub") in _squeezed(body)
    assert "danger-full-access" in body and "workspace-write" in body
    assert not (base / "outside" / "release-artifacts-2026-12-02.tar.gz").exists()


def test_json_carries_the_request_whole(base: Path) -> None:
    ws = base / "ws"
    (ws / "sub").mkdir()
    command = _command(base / "outside")
    with OpenAICompatServer(handler=_escalating(command)) as server:
        argv = ["run", "go", "--json", "--deny", "--cwd", str(ws), "--base-url", server.base_url]
        proc = subprocess.run(
            [sys.executable, "-m", "dsh.cli", *argv],
            env=_env(base),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    (asked,) = [line for line in lines if line.get("type") == "approval"]
    assert asked["command"] == command
    assert asked["cwd"] == str(ws / "sub")
    assert asked["permissions"] == "danger-full-access" and asked["current"] == "workspace-write"
    assert asked["justification"] == WHY
    assert asked["toolName"] == "bash" and asked["callId"] == "call_0"
    assert lines.index(asked) < next(i for i, e in enumerate(lines) if e.get("type") == "approval/decided")

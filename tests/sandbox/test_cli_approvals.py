"""``dsh run`` approvals as a user meets them: ``--approve``, ``--deny``, a terminal prompt, no channel.

The CLI runs as a real subprocess against the local OpenAI-compatible test server, whose
model asks to write outside the workspace with a ``danger-full-access`` escalation.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

KEY = "sk-live-DO-NOT-LEAK-approvals"
WHY = "the user asked for a file outside the workspace"


def _escalating(out: Path, calls: int = 1) -> Any:
    def handler(req: RecordedRequest) -> Response:
        done = sum(1 for m in req.messages if m.get("role") == "tool")
        if done >= calls:
            return stream_reply(text="finished")
        args = {
            "command": f"echo {done} >> {out}/escalated && cat {out}/escalated",
            "description": "write outside",
            "sandbox_permissions": "danger-full-access",
            "justification": WHY,
        }
        return stream_reply(tool_calls=[WireToolCall.split(f"call_{done}", "bash", json.dumps(args), 2)])

    return handler


def _run(
    ws: Path, server: OpenAICompatServer, *flags: str, stdin: Any = subprocess.DEVNULL
) -> tuple[int, list[Any], str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DEEPSEEK_API_KEY", "DSH_BASE_URL", "DSH_MODEL")}
    env.update({"DSH_STORE": f"sqlite:{ws.parent / 's.db'}", "NO_COLOR": "1", "DSH_API_KEY": KEY})
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dsh.cli",
            "run",
            "go",
            "--json",
            "--cwd",
            str(ws),
            "--base-url",
            server.base_url,
            *flags,
        ],
        env=env,
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, lines, proc.stderr


def _results(lines: list[Any]) -> list[str]:
    return [
        "".join(b["text"] for b in e["data"]["message"]["content"][0]["content"])
        for e in lines
        if e.get("type") == "tool/result"
    ]


def _outcomes(lines: list[Any]) -> list[str]:
    return [e["data"]["outcome"] for e in lines if e.get("type") == "approval/decided"]


def test_approve_allows_the_escalation_once(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    with OpenAICompatServer(handler=_escalating(out)) as server:
        code, lines, stderr = _run(ws, server, "--approve")
    assert code == 0, stderr
    assert _results(lines) == ["0\n"] and (out / "escalated").read_text() == "0\n"
    asked = next(e for e in lines if e.get("type") == "approval/asked")
    assert asked["data"]["reason"] == f"escalate sandbox to danger-full-access: {WHY}"
    assert _outcomes(lines) == ["allowed-once"] and KEY not in stderr + json.dumps(lines)


def test_deny_rejects_it(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    with OpenAICompatServer(handler=_escalating(out)) as server:
        code, lines, _ = _run(ws, server, "--deny")
    assert code == 0
    assert _results(lines) == ['Error: the user rejected escalating this command to "danger-full-access"']
    assert _outcomes(lines) == ["rejected"] and not (out / "escalated").exists()


def test_without_a_terminal_or_a_flag_it_is_refused_and_says_how_to_answer(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    with OpenAICompatServer(handler=_escalating(out)) as server:
        code, lines, stderr = _run(ws, server)
    assert code == 0
    assert _results(lines) == [
        'Error: sandbox escalation to "danger-full-access" requires approval, '
        "but no approval channel is available"
    ]
    assert _outcomes(lines) == ["unavailable"] and not (out / "escalated").exists()
    assert "pass --approve or --deny" in stderr and len(stderr.strip().splitlines()) == 1


def test_at_a_terminal_allow_for_the_session_asks_once(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    main, child = pty.openpty()
    try:
        os.write(main, b"s\n")  # the person types "s" at the first prompt; no second prompt may come
        with OpenAICompatServer(handler=_escalating(out, calls=2)) as server:
            code, lines, stderr = _run(ws, server, stdin=child)
    finally:
        os.close(main)
        os.close(child)
    assert code == 0, stderr
    assert stderr.count("allow? [o]nce / [s]ession / [r]eject") == 1
    assert _outcomes(lines) == ["allowed-once", "allowed-once"]
    assert (out / "escalated").read_text() == "0\n1\n"


def test_a_rejection_at_the_terminal(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    main, child = pty.openpty()
    try:
        os.write(main, b"r\n")
        with OpenAICompatServer(handler=_escalating(out)) as server:
            code, lines, stderr = _run(ws, server, stdin=child)
    finally:
        os.close(main)
        os.close(child)
    assert code == 0, stderr
    assert _outcomes(lines) == ["rejected"] and not (out / "escalated").exists()


def test_approve_and_deny_together_is_a_usage_error(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=_escalating(tmp_path)) as server:
        code, _, stderr = _run(tmp_path, server, "--approve", "--deny")
    assert code == 2 and "--approve and --deny exclude each other" in stderr

"""Helpers for the MCP tests: the FastMCP test server's path, a ``.mcp.json`` for it, a model
that calls it, the CLI."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from dsh.testing.server import RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

SERVERS = Path(__file__).parent / "servers"
CALC = SERVERS / "calc.py"
KEY = "sk-live-DO-NOT-LEAK-0123456789"


def calc_entry(
    script: Path, calls: Path | None = None, starts: Path | None = None, **extra: Any
) -> dict[str, Any]:
    """A ``.mcp.json`` stdio entry running ``script`` with this Python (``calls``: where it
    counts its ``add`` calls; ``starts``: where it counts its starts)."""
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(script)], **extra}
    if calls is not None:
        entry.setdefault("env", {})["CALC_CALLS"] = str(calls)
    if starts is not None:
        entry.setdefault("env", {})["CALC_STARTS"] = str(starts)
    return entry


def adding(req: RecordedRequest) -> Response:
    """A model that calls ``mcp__calc__add`` with 2 and 3, then says the sum the tool gave."""
    if any(m.get("role") == "tool" for m in req.messages):
        result = [m for m in req.messages if m.get("role") == "tool"][-1]
        return stream_reply(text=f"The sum is {result['content']}.")
    return stream_reply(tool_calls=[WireToolCall.split("call_add", "mcp__calc__add", '{"a": 2, "b": 3}')])


def write_config(path: Path, **servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def copy_calc(where: Path) -> Path:
    """A copy of the calc server (a test may delete it: "the server's file gone")."""
    where.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(CALC, where / "calc_server.py"))


def dsh(
    cwd: Path, *args: str, store: Path, stdin: str | None = None, typed: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m dsh.cli ARGS`` in ``cwd`` against the SQLite store ``store``, keylessly, its
    dsh home ``store``'s directory's ``dsh-home`` unless ``DSH_HOME`` is given (``stdin``: the
    text on its standard input, as ``dsh chat`` reads its lines; ``typed``: stdin is a
    terminal on which this was typed)."""
    drop = (
        "DEEPSEEK_API_KEY",
        "DSH_API_KEY",
        "DSH_BASE_URL",
        "DEEPSEEK_BASE_URL",
        "DSH_MODEL",
        "DSH_TRUST_MCP",
    )
    base = {k: v for k, v in os.environ.items() if k not in drop}
    base.update({"DSH_STORE": f"sqlite:{store}", "DSH_HOME": str(store.parent / "dsh-home")})
    base.update({"NO_COLOR": "1", "PYTHONUTF8": "1", **env})
    terminal = pty.openpty() if typed is not None else None
    if terminal is not None and typed:
        os.write(terminal[0], typed.encode())
    try:
        return subprocess.run(
            [sys.executable, "-m", "dsh.cli", *args],
            env=base,
            input=stdin,
            stdin=terminal[1] if terminal is not None else None,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=cwd,
            check=False,
        )
    finally:
        for fd in terminal or ():
            os.close(fd)

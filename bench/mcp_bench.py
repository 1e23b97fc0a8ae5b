"""MCP call cost: ``python -m bench.mcp_bench [N]``.

Starts the tests' FastMCP stdio server (``tests/mcp/servers/calc.py``) as a session's server,
unconfined and under ``workspace-write``, times start + tool list, N ``add`` calls through the
registry (validation, redaction, spill check included) and the stop. Prints one JSON line per
policy: ``{"confined", "start_s", "ms_per_call", "stop_s"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from dsh.mcp import StdioServer, open_servers
from dsh.tools import ToolContext, ToolLike, ToolRegistry
from dsh.tools.sandbox import SandboxPolicy

CALC = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "servers" / "calc.py"


async def measure(confined: bool, n: int) -> dict[str, object]:
    workspace = Path(tempfile.mkdtemp(prefix="dsh-mcp-bench-"))
    spec = StdioServer("calc", sys.executable, (str(CALC),))
    servers = open_servers([spec], "bench", workspace, SandboxPolicy() if confined else None)
    t0 = time.perf_counter()
    registry = ToolRegistry(list[ToolLike](await servers.tools()))
    t1 = time.perf_counter()
    ctx = ToolContext(session_id="bench", call_id="c", cwd=workspace)
    for _ in range(n):
        await registry.call("mcp__calc__add", '{"a": 1, "b": 2}', ctx)
    t2 = time.perf_counter()
    await servers.aclose()
    t3 = time.perf_counter()
    return {"confined": confined, "start_s": round(t1 - t0, 3), "ms_per_call": round(1000 * (t2 - t1) / n, 2),
            "stop_s": round(t3 - t2, 3)}  # fmt: skip


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    for confined in (False, True):
        print(json.dumps(asyncio.run(measure(confined, n))))


if __name__ == "__main__":
    main()

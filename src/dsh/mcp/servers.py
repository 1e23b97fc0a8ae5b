"""A session's MCP servers: started together when the session first needs its tools, shared by
its turns and its subagent children (they share its registry), stopped with it.

A server that fails to start offers no tools and says so in one notice line; a call whose
server dies, hangs past its timeout, refuses it or answers it malformed is one tool error
(``MCP_SERVER_ERROR``) and one notice line — never a crashed turn. The notice goes to
``notice`` (the CLI prints it on stderr under the live view), else the ``dsh.mcp`` logger.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

from dsh.errors import McpServerError, UsageError
from dsh.mcp.complaints import Notice
from dsh.mcp.config import McpServerSpec
from dsh.mcp.connection import McpConnection, ServerPlace
from dsh.mcp.results import tool_output
from dsh.mcp.tool import McpTool
from dsh.tools import ToolContext, ToolOutput

_log = logging.getLogger("dsh.mcp")


class McpServers:
    """The connections of one session to ``specs``, and the tools they offer."""

    def __init__(
        self,
        specs: Sequence[McpServerSpec],
        place: ServerPlace,
        *,
        notice: Notice | None = None,
        reruns_in_replay: bool = False,
    ) -> None:
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise UsageError(
                f"MCP servers named twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}"
            )
        self._notice = notice or (lambda line: _log.warning("%s", line))
        self._connections = {s.name: McpConnection(s, place, self.notice) for s in specs}
        self._reruns = reruns_in_replay
        self._tools: list[McpTool] | None = None
        self._lock = asyncio.Lock()

    def __bool__(self) -> bool:
        return bool(self._connections)

    def notice(self, line: str) -> None:
        try:
            self._notice(line)
        except Exception:  # a notice sink must not break a call
            _log.warning("%s", line)

    async def _listed(self, connection: McpConnection) -> list[McpTool]:
        try:
            await connection.start()
        except McpServerError as exc:
            self.notice(f"dsh: {exc}; its tools are not offered")
            return []
        return [
            McpTool(connection.name, t.name, t.description or "", dict(t.inputSchema), self,
                    reruns_in_replay=self._reruns)
            for t in connection.listed
        ]  # fmt: skip

    async def tools(self) -> list[McpTool]:
        """Every server's tools, the servers started concurrently on the first call (once)."""
        async with self._lock:
            if self._tools is None:
                found = await asyncio.gather(*(self._listed(c) for c in self._connections.values()))
                self._tools = [tool for tools in found for tool in tools]
            return list(self._tools)

    async def call_tool(
        self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext
    ) -> ToolOutput:
        """Call ``tool`` of ``server``; a server failure is raised as :class:`McpServerError`
        (the registry's error result) after its notice line."""
        connection = self._connections.get(server)
        if connection is None:
            raise McpServerError(f"no MCP server {server!r} in this session")
        started = time.monotonic()
        try:
            result = await connection.call(tool, arguments)
        except McpServerError as exc:
            self.notice(f"dsh: {exc}")
            raise
        return await tool_output(
            result, ctx, server=server, tool=tool, duration_ms=int((time.monotonic() - started) * 1000)
        )

    async def aclose(self) -> None:
        """Stop every server (idempotent)."""
        await asyncio.gather(*(c.aclose() for c in self._connections.values()), return_exceptions=True)

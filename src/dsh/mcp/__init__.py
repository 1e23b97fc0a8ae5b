"""MCP servers for dsh's agents: configs, their tools as ``mcp__<server>__<tool>``, results, replay.

The SDK (``mcp``, the ``[mcp]`` extra) is needed only to start servers: :func:`open_servers`
imports it; the configs and the recorded tools of a replay do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dsh.errors import UsageError, install_hint
from dsh.mcp.config import (
    WORKSPACE_FILE,
    HttpServer,
    McpServerSpec,
    StdioServer,
    load_config,
    parse_config,
    server_spec,
    workspace_servers,
)
from dsh.mcp.recorded import recorded_tools
from dsh.mcp.tool import McpTool, split_name, tool_name
from dsh.tools.sandbox import SandboxPolicy

if TYPE_CHECKING:
    from dsh.mcp.complaints import Notice
    from dsh.mcp.servers import McpServers

__all__ = [
    "WORKSPACE_FILE",
    "HttpServer",
    "McpServerSpec",
    "McpTool",
    "StdioServer",
    "load_config",
    "open_servers",
    "parse_config",
    "recorded_tools",
    "server_spec",
    "split_name",
    "tool_name",
    "workspace_servers",
]


def open_servers(
    specs: Sequence[McpServerSpec],
    session_id: str,
    workspace: Path,
    sandbox: SandboxPolicy | None,
    *,
    notice: Notice | None = None,
    reruns_in_replay: bool = False,
) -> McpServers:
    """A session's :class:`~dsh.mcp.servers.McpServers` (nothing started yet); without the SDK
    a one-line ``UsageError`` saying how to install it."""
    try:
        from dsh.mcp.connection import ServerPlace
        from dsh.mcp.servers import McpServers
    except ImportError as exc:  # the optional SDK, imported only when a server is configured
        raise UsageError(f"MCP servers need the mcp extra: {install_hint('mcp')} ({exc})") from None
    place = ServerPlace(session_id, workspace, sandbox)
    return McpServers(specs, place, notice=notice, reruns_in_replay=reruns_in_replay)

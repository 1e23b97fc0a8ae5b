"""MCP tools known only from a recording: what a replay offers without starting any server.

A recording's ``request/header`` tool specs hold every ``mcp__<server>__<tool>`` the model was
offered, with the schema it saw; a replay registers them as :class:`~dsh.mcp.tool.McpTool`
without a caller, so the model sees the same tool set and each call is served from the
recorded result (``dsh.tools.served``) after its name and arguments are checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dsh.mcp.tool import McpTool, split_name


def recorded_tools(specs: Iterable[dict[str, Any]]) -> list[McpTool]:
    """An uncallable :class:`McpTool` for each ``mcp__`` spec (the first of each name)."""
    tools: dict[str, McpTool] = {}
    for spec in specs:
        name = spec.get("name")
        parts = split_name(name) if isinstance(name, str) else None
        if parts is None or name in tools:
            continue
        parameters = spec.get("parameters")
        schema = parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
        tool = McpTool(*parts, str(spec.get("description") or ""), schema, None)
        if tool.name == name:
            tools[name] = tool
    return list(tools.values())

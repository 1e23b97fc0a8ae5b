"""The MCP servers an ACP client hands a session (``session/new`` / ``session/load``
``mcpServers``) as dsh's server specs, and the ``mcpCapabilities`` dsh advertises.

stdio servers always (ACP requires them); ``http`` and ``sse`` because dsh advertises both
(``mcpCapabilities: {http: true, sse: true}``), so a client sends them. The values are the
client's, literal: nothing of dsh's environment is expanded into them. A malformed entry is
an invalid-params error naming the server. A name is made safe for tool names (any other
character ``_``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from acp.schema import McpCapabilities
from pydantic import BaseModel

from dsh.acp.prompt import invalid_params
from dsh.errors import McpConfigError
from dsh.mcp import McpServerSpec, server_spec

CAPABILITIES = McpCapabilities(http=True, sse=True)


def _pairs(value: Any) -> dict[str, str]:
    """ACP's ``[{name, value}]`` lists as a mapping."""
    out: dict[str, str] = {}
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            out[item["name"]] = str(item.get("value", ""))
    return out


def _entry(data: dict[str, Any]) -> dict[str, Any]:
    """One ACP server as a ``.mcp.json`` entry."""
    kind = data.get("type")
    if kind in ("http", "sse"):
        return {"type": kind, "url": data.get("url"), "headers": _pairs(data.get("headers"))}
    return {"type": "stdio", "command": data.get("command"), "args": data.get("args", []),
            "env": _pairs(data.get("env"))}  # fmt: skip


def acp_servers(servers: Sequence[Any] | None, method: str) -> tuple[McpServerSpec, ...]:
    """The client's ``mcpServers`` as specs (``method`` names the request in errors)."""
    specs: dict[str, McpServerSpec] = {}
    for server in servers or ():
        data = server.model_dump(mode="json") if isinstance(server, BaseModel) else server
        if not isinstance(data, dict):
            raise invalid_params(f"{method}: an mcpServers entry is not an object")
        name = re.sub(r"[^A-Za-z0-9_-]", "_", str(data.get("name", "")))[:40]  # "My server" → My_server
        try:
            spec = server_spec(name, _entry(data), f"{method} mcpServers", env={})
        except McpConfigError as exc:
            raise invalid_params(str(exc)) from None
        specs[spec.name] = spec
    return tuple(specs.values())

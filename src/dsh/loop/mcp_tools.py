"""A top-level agent's MCP servers (``AgentConfig.mcp_servers``): their tools join the agent's
own registry when its first turn starts (so a session that never runs a turn starts none),
its subagent children share them (they share the registry), and they stop with the agent."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dsh.loop.config import AgentConfig
from dsh.mcp import open_servers
from dsh.tools import ToolRegistry

if TYPE_CHECKING:  # the SDK is imported only when a session has servers (``open_servers``)
    from dsh.mcp.servers import McpServers


def own_registry(registry: ToolRegistry) -> ToolRegistry:
    """A copy of ``registry`` the agent may add to (the caller's stays as it was)."""
    return ToolRegistry(
        [t for n in registry.names() if (t := registry.get(n)) is not None], spill=registry.spill
    )


class SessionMcp:
    """The servers of one session and the registry their tools go into."""

    def __init__(self, servers: McpServers, registry: ToolRegistry) -> None:
        self.servers = servers
        self._registry = registry
        self._joined = False

    async def ready(self) -> None:
        """Start the servers and register their tools (once); a name the registry already
        has keeps its tool (one notice line)."""
        if self._joined:
            return
        self._joined = True
        for tool in await self.servers.tools():
            if tool.name in self._registry:
                self.servers.notice(f"dsh: {tool.name} is already a tool: the MCP one is not offered")
                continue
            self._registry.register(tool)

    async def aclose(self) -> None:
        await self.servers.aclose()


def session_mcp(
    config: AgentConfig, registry: ToolRegistry, session_id: str, cwd: Path, *, delegated: bool
) -> tuple[ToolRegistry, SessionMcp | None]:
    """The agent's registry and servers: a top-level agent with servers gets its own registry;
    a child (``delegated``) and an agent without servers keep ``registry`` and get none."""
    if delegated or not config.mcp_servers:
        return registry, None
    servers = open_servers(
        config.mcp_servers,
        session_id,
        cwd,
        config.sandbox,
        notice=config.mcp_notice,
        reruns_in_replay=config.live_mcp,
    )
    owned = own_registry(registry)
    return owned, SessionMcp(servers, owned)

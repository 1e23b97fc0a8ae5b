"""Subagents: the ``subagent`` (spawn) and ``subagent_fork`` (fork) tools."""

from dsh.subagents.agent import Agent
from dsh.subagents.tools import (
    DEFAULT_MAX_DEPTH,
    ForkArgs,
    ForkTool,
    SpawnArgs,
    SpawnTool,
    SubagentTool,
    live_tools,
    standard_tools,
    subagent_tools,
)

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "Agent",
    "ForkArgs",
    "ForkTool",
    "SpawnArgs",
    "SpawnTool",
    "SubagentTool",
    "live_tools",
    "standard_tools",
    "subagent_tools",
]

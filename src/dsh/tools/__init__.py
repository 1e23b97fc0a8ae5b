"""Tools: the ``Tool`` Protocol, the registry and the built-in tools."""

from dsh.tools.base import Tool, ToolContext, ToolOutput

__all__ = ["Tool", "ToolContext", "ToolOutput"]

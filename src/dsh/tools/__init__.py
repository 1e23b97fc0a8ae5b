"""Tools: the ``Tool`` Protocol, the registry and the built-in tools."""

from dsh.tools.base import Tool, ToolContext, ToolOutput
from dsh.tools.registry import PreparedCall, ToolRegistry, builtin_registry
from dsh.tools.schema import ToolArgs, parameters_schema

__all__ = [
    "PreparedCall",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "builtin_registry",
    "parameters_schema",
]

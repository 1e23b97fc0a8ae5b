"""Tools: the typed ``Tool[A]`` base, the ``ToolLike`` Protocol, the registry and the built-in tools."""

from dsh.tools.base import Tool, ToolContext, ToolKind, ToolLike, ToolLocation, ToolOutput, ToolPresentation
from dsh.tools.observations import FileObservations
from dsh.tools.registry import PreparedCall, ToolRegistry, builtin_registry
from dsh.tools.schema import ClosedArgs, Number, ToolArgs, parameters_schema
from dsh.tools.spill import SpillPolicy

__all__ = [
    "ClosedArgs",
    "FileObservations",
    "Number",
    "PreparedCall",
    "SpillPolicy",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolKind",
    "ToolLike",
    "ToolLocation",
    "ToolOutput",
    "ToolPresentation",
    "ToolRegistry",
    "builtin_registry",
    "parameters_schema",
]

"""Tools: the typed ``Tool[A]`` base, the ``ToolLike`` Protocol, the registry and the built-in tools.

Names load on first use (:mod:`dsh.lazy`): importing one tools module does not import them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.lazy import exports

_HOMES = {
    "Tool": "dsh.tools.base",
    "ToolContext": "dsh.tools.base",
    "ToolKind": "dsh.tools.base",
    "ToolLike": "dsh.tools.base",
    "ToolLocation": "dsh.tools.base",
    "ToolOutput": "dsh.tools.base",
    "ToolPresentation": "dsh.tools.base",
    "FileObservations": "dsh.tools.observations",
    "PreparedCall": "dsh.tools.registry",
    "ToolRegistry": "dsh.tools.registry",
    "builtin_registry": "dsh.tools.registry",
    "ClosedArgs": "dsh.tools.schema",
    "Number": "dsh.tools.schema",
    "ToolArgs": "dsh.tools.schema",
    "parameters_schema": "dsh.tools.schema",
    "SpillPolicy": "dsh.tools.spill",
}

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

__getattr__, __dir__ = exports(__name__, _HOMES)

if TYPE_CHECKING:
    from dsh.tools.base import (
        Tool,
        ToolContext,
        ToolKind,
        ToolLike,
        ToolLocation,
        ToolOutput,
        ToolPresentation,
    )
    from dsh.tools.observations import FileObservations
    from dsh.tools.registry import PreparedCall, ToolRegistry, builtin_registry
    from dsh.tools.schema import ClosedArgs, Number, ToolArgs, parameters_schema
    from dsh.tools.spill import SpillPolicy

"""Result codes tools report, and the helper that raises a ``ToolError`` carrying one."""

from __future__ import annotations

from typing import Final

from dsh.errors import ToolError

INVALID_ARGUMENTS: Final = "INVALID_ARGUMENTS"
UNKNOWN_TOOL: Final = "UNKNOWN_TOOL"
TOOL_ERROR: Final = "TOOL_ERROR"
OUTSIDE_WORKSPACE: Final = "OUTSIDE_WORKSPACE"
NOT_FOUND: Final = "NOT_FOUND"
IS_DIRECTORY: Final = "IS_DIRECTORY"
NOT_A_DIRECTORY: Final = "NOT_A_DIRECTORY"
NOT_A_FILE: Final = "NOT_A_FILE"
BINARY_FILE: Final = "BINARY_FILE"
IO_ERROR: Final = "IO_ERROR"
OFFSET_OUT_OF_RANGE: Final = "OFFSET_OUT_OF_RANGE"
NO_MATCH: Final = "NO_MATCH"
AMBIGUOUS_MATCH: Final = "AMBIGUOUS_MATCH"
NO_CHANGE: Final = "NO_CHANGE"
TIMEOUT: Final = "TIMEOUT"


def tool_error(message: str, code: str) -> ToolError:
    """A :class:`ToolError` whose ``code`` is ``code`` (the registry reports it on the result)."""
    exc = ToolError(message)
    exc.code = code
    return exc

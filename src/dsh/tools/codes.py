"""Result codes tools report, and the helper that raises a ``ToolError`` carrying one.

The file tools use the original's codes (``FS_*``), so a logged ``tool/result.error`` reads
the same. ``PLAIN`` marks an error the original reports without a code (most argument
texts, subagent headlines): its result carries no ``data.error``.
"""

from __future__ import annotations

from typing import Final

from dsh.errors import ToolError

PLAIN: Final = ""
INVALID_ARGUMENTS: Final = "INVALID_ARGUMENTS"
UNKNOWN_TOOL: Final = "UNKNOWN_TOOL"
TOOL_ERROR: Final = "TOOL_ERROR"
OUTSIDE_WORKSPACE: Final = "OUTSIDE_WORKSPACE"
IO_ERROR: Final = "IO_ERROR"
NOT_A_DIRECTORY: Final = "NOT_A_DIRECTORY"
FS_NOT_FOUND: Final = "FS_NOT_FOUND"
FS_NOT_REGULAR_FILE: Final = "FS_NOT_REGULAR_FILE"
FS_NOT_TEXT: Final = "FS_NOT_TEXT"
FS_NOT_OBSERVED: Final = "FS_NOT_OBSERVED"
FS_STALE_VERSION: Final = "FS_STALE_VERSION"
FS_EDIT_NOT_FOUND: Final = "FS_EDIT_NOT_FOUND"
FS_AMBIGUOUS_EDIT: Final = "FS_AMBIGUOUS_EDIT"
FS_TOO_LARGE: Final = "FS_TOO_LARGE"


def tool_error(message: str, code: str = PLAIN) -> ToolError:
    """A :class:`ToolError` whose ``code`` is ``code`` (the registry reports it on the result)."""
    exc = ToolError(message)
    exc.code = code
    return exc

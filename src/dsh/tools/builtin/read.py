"""The ``read`` tool: a window of a UTF-8 text file with line numbers.

The answer has the original's shape::

    <path>/abs/path/notes.txt</path>
    <type>file</type>
    <content>
    1: first line
    2: second line

    (End of file - total 2 lines)
    </content>

When the window stops before the end the footer reads ``(Showing lines A-B of N. Use
offset=B+1 to continue.)``. Lines longer than ``max_line_chars`` are cut with a marker, and
the whole answer stops at ``max_output_bytes`` (the footer says where to continue).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from pydantic import Field

from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.builtin._base import (
    BINARY_SNIFF_BYTES,
    BuiltinTool,
    binary_error,
    file_report,
    os_failure,
    require_file,
)
from dsh.tools.codes import OFFSET_OUT_OF_RANGE, tool_error
from dsh.tools.schema import ToolArgs
from dsh.tools.workspace import ResolvedPath, resolve_path

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
_COUNT_CHUNK = 1 << 20


class ReadArgs(ToolArgs):
    file_path: str = Field(description="File to read: relative to the workspace, or absolute.")
    offset: int = Field(
        1,
        ge=1,
        description="Line number to start at (1-based). Default 1.",
        json_schema_extra={"type": "number"},
    )
    limit: int = Field(
        DEFAULT_LIMIT,
        ge=1,
        description=f"How many lines to return at most. Default {DEFAULT_LIMIT}.",
        json_schema_extra={"type": "number"},
    )


@dataclass(slots=True)
class _Window:
    lines: list[tuple[int, str]] = field(default_factory=list)
    total: int = 0
    capped: bool = False


def _count_rest(handle: BinaryIO) -> int:
    """Lines left in ``handle`` from its position, counted in large chunks."""
    newlines = 0
    last = b""
    while chunk := handle.read(_COUNT_CHUNK):
        newlines += chunk.count(b"\n")
        last = chunk[-1:]
    return newlines + (1 if last and last != b"\n" else 0)


def _clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}… [line cut: {len(text)} characters]"


def _read_window(path: ResolvedPath, offset: int, limit: int, max_bytes: int, max_chars: int) -> _Window:
    require_file(path)
    window = _Window()
    used = 0
    try:
        with path.real.open("rb") as handle:
            if b"\x00" in handle.read(BINARY_SNIFF_BYTES):
                raise binary_error(path, "it contains NUL bytes")
            handle.seek(0)
            for raw in handle:
                window.total += 1
                if window.total < offset:
                    continue
                if len(window.lines) >= limit:
                    window.total += _count_rest(handle)
                    break
                raw = raw[:-1] if raw.endswith(b"\n") else raw
                raw = raw[:-1] if raw.endswith(b"\r") else raw
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise binary_error(path, f"invalid UTF-8 on line {window.total}") from exc
                text = _clip(text, max_chars)
                size = len(text.encode("utf-8")) + len(str(window.total)) + 3
                if window.lines and used + size > max_bytes:
                    window.capped = True
                    window.total += _count_rest(handle)
                    break
                used += size
                window.lines.append((window.total, text))
    except OSError as exc:
        raise os_failure("read", path.shown, exc) from exc
    return window


class ReadTool(BuiltinTool[ReadArgs]):
    """Read a text file, line-numbered, one window at a time."""

    name = "read"
    description = (
        "Read a UTF-8 text file from the workspace. Returns the lines prefixed with their "
        "1-based numbers (`N: text`) and a footer with the total line count. Use `offset` and "
        "`limit` to page through long files; the footer tells you the next offset."
    )
    args_model = ReadArgs
    concurrency_safe = True

    def __init__(self, *, max_output_bytes: int = 100_000, max_line_chars: int = MAX_LINE_CHARS) -> None:
        self.max_output_bytes = max_output_bytes
        self.max_line_chars = max_line_chars

    async def call(self, args: ReadArgs, ctx: ToolContext) -> ToolOutput:
        path = resolve_path(ctx, args.file_path, reading=True)
        window = await asyncio.to_thread(
            _read_window, path, args.offset, args.limit, self.max_output_bytes, self.max_line_chars
        )
        if args.offset > max(window.total, 1):
            raise tool_error(
                f"offset {args.offset} is past the end of {path.shown} ({window.total} lines)",
                OFFSET_OUT_OF_RANGE,
            )
        numbered = "\n".join(f"{number}: {text}" for number, text in window.lines)
        last = window.lines[-1][0] if window.lines else 0
        if last >= window.total:
            footer = f"(End of file - total {window.total} lines)"
        else:
            why = f"Output capped at {self.max_output_bytes} bytes. " if window.capped else ""
            footer = (
                f"({why}Showing lines {args.offset}-{last} of {window.total}. "
                f"Use offset={last + 1} to continue.)"
            )
        body = f"{numbered}\n\n{footer}" if numbered else footer
        meta: dict[str, Any] = {
            "path": str(path.shown),
            "offset": args.offset,
            "lines": [{"number": number, "text": text} for number, text in window.lines],
            "totalLines": window.total,
        }
        return ToolOutput.text(file_report(path, body), meta=meta)

"""The ``read`` tool: a window of a UTF-8 text file with line numbers, in the original's words.

::

    <path>/abs/path/notes.txt</path>
    <type>file</type>
    <content>
    1: first line
    2: second line

    (End of file - total 2 lines)
    </content>

Lines split on ``\\n`` (a trailing ``\\r`` is dropped, a final unterminated line counts, an
empty file has 0 lines). A line longer than 2000 characters (UTF-16 units, as the original
counts) is cut with ``... (line truncated to 2000 chars)``; the selected lines stop at
51200 UTF-8 bytes (footer ``(Output capped. ...)``) while the total is still counted. A
window that stops before the end says ``(Showing lines O-E of T. Use offset=E+1 to
continue.)``. Reads are observed for the read-before-mutate guard (present, or absent for
a missing file).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Final

from pydantic import Field

from dsh.tools.base import Tool, ToolContext, ToolLocation, ToolOutput
from dsh.tools.builtin._base import (
    decode_text,
    file_locations,
    file_report,
    file_title,
    not_found,
    quoted,
    read_regular,
    real_key,
)
from dsh.tools.codes import FS_NOT_FOUND, tool_error
from dsh.tools.observations import FileObservations
from dsh.tools.schema import Number, ToolArgs
from dsh.tools.workspace import ResolvedPath, resolve_path

MAX_LIMIT: Final = 2000
MAX_LINE_CHARS: Final = 2000
MAX_OUTPUT_BYTES: Final = 51_200

LANGUAGES: Final = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "jsx",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".json": "json",
    ".md": "markdown",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".xml": "xml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cc": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".sql": "sql",
    ".lua": "lua",
    ".vue": "vue",
    ".svelte": "svelte",
}
"""Extensions whose ``read`` meta names a language (UI highlighting only; ``.txt`` has none)."""


class ReadArgs(ToolArgs):
    file_path: str = Field(description="File to read: relative to the workspace, or absolute.")
    offset: Number | None = Field(None, description="Line number to start at (1-based). Default 1.")
    limit: Number | None = Field(None, description=f"How many lines to return at most. Default {MAX_LIMIT}.")


@dataclass(slots=True)
class _Window:
    lines: list[tuple[int, str]] = field(default_factory=list)
    total: int = 0
    capped: bool = False


def _positive_int(value: float | None, name: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not float(value).is_integer() or value < 1:
        raise tool_error(f"{name} must be a positive integer")
    return int(value)


def clip_line(text: str, max_chars: int = MAX_LINE_CHARS) -> str:
    """``text`` cut to ``max_chars`` UTF-16 units (never inside a surrogate pair) with the marker."""
    if len(text) <= max_chars // 2:
        return text
    units = len(text.encode("utf-16-le")) // 2
    if units <= max_chars:
        return text
    if units == len(text):
        return f"{text[:max_chars]}... (line truncated to {max_chars} chars)"
    used = 0
    for i, char in enumerate(text):
        width = 2 if ord(char) > 0xFFFF else 1
        if used + width > max_chars:
            return f"{text[:i]}... (line truncated to {max_chars} chars)"
        used += width
    return text


def split_lines(text: str) -> list[str]:
    """Lines as the original counts them (``\\n``-split, ``\\r`` dropped, no empty last line)."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [part[:-1] if part.endswith("\r") else part for part in parts]


def select(lines: list[str], offset: int, limit: int, max_bytes: int) -> _Window:
    """The window ``offset``..``offset+limit-1`` of ``lines``, capped at ``max_bytes``."""
    window = _Window(total=len(lines))
    used = -1
    for number in range(offset, min(len(lines), offset + limit - 1) + 1):
        text = clip_line(lines[number - 1])
        size = len(f"{number}: {text}".encode()) + 1
        if window.lines and used + size > max_bytes:
            window.capped = True
            break
        used += size
        window.lines.append((number, text))
    return window


def _load(path: ResolvedPath, files: FileObservations) -> list[str]:
    """The file's lines (blocking), recording what the session saw of it."""
    loaded = read_regular("read", path)
    if loaded is None:
        files.saw_absent(real_key(path))
        raise not_found("read", path)
    data, st = loaded
    text = decode_text("read", path, data)
    files.saw_present(real_key(path), st)
    return split_lines(text)


class ReadTool(Tool[ReadArgs]):
    """Read a text file, line-numbered, one window at a time."""

    name = "read"
    description = (
        "Read a UTF-8 text file from the workspace. Returns the lines prefixed with their "
        "1-based numbers (`N: text`) and a footer with the total line count. Use `offset` and "
        "`limit` to page through long files; the footer tells you the next offset. Read a file "
        "before you change it with `write` or `edit`."
    )
    args_model = ReadArgs
    concurrency_safe = True
    acp_kind = "read"

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        return file_title("Read", args)

    def acp_locations(self, args: Mapping[str, Any]) -> tuple[ToolLocation, ...]:
        offset = args.get("offset")
        return file_locations(args, offset if type(offset) is int and offset > 0 else None)

    def __init__(self, *, max_output_bytes: int = MAX_OUTPUT_BYTES) -> None:
        self.max_output_bytes = max_output_bytes

    async def call(self, args: ReadArgs, ctx: ToolContext) -> ToolOutput:
        offset = _positive_int(args.offset, "offset", 1)
        limit = _positive_int(args.limit, "limit", MAX_LIMIT)
        if limit > MAX_LIMIT:
            raise tool_error(f"limit must be less than or equal to {MAX_LIMIT}")
        path = resolve_path(ctx, args.file_path, reading=True)
        lines = await asyncio.to_thread(_load, path, ctx.files)
        total = len(lines)
        if offset > max(total, 1):
            raise tool_error(
                f"offset {offset} is out of range for {quoted(path)} ({total} lines)", FS_NOT_FOUND
            )
        window = select(lines, offset, limit, self.max_output_bytes)
        last = window.lines[-1][0] if window.lines else 0
        if window.capped:
            footer = f"(Output capped. Showing lines {offset}-{last}. Use offset={last + 1} to continue.)"
        elif last >= total:
            footer = f"(End of file - total {total} lines)"
        else:
            footer = f"(Showing lines {offset}-{last} of {total}. Use offset={last + 1} to continue.)"
        numbered = "\n".join(f"{number}: {text}" for number, text in window.lines)
        body = f"{numbered}\n\n{footer}" if numbered else footer
        meta: dict[str, Any] = {
            "path": str(path.shown),
            "offset": offset,
            "lines": [{"number": number, "text": text} for number, text in window.lines],
            "totalLines": total,
        }
        lang = LANGUAGES.get(PurePath(path.shown).suffix.lower())
        if lang:
            meta["lang"] = lang
        return ToolOutput.text(file_report(path, body), meta=meta)

"""The ``write`` and ``edit`` tools: whole-file writes and exact string replacement, both atomic."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.builtin._base import BuiltinTool, atomic_write, count_lines, file_report, read_text
from dsh.tools.codes import AMBIGUOUS_MATCH, INVALID_ARGUMENTS, NO_CHANGE, NO_MATCH, tool_error
from dsh.tools.schema import ToolArgs
from dsh.tools.workspace import ResolvedPath, resolve_path


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class WriteArgs(ToolArgs):
    file_path: str = Field(description="File to create or replace: relative to the workspace, or absolute.")
    content: str = Field(description="The complete new content of the file (UTF-8 text).")


class WriteTool(BuiltinTool[WriteArgs]):
    """Create or overwrite a text file (parents created, temp file + rename)."""

    name = "write"
    description = (
        "Write a UTF-8 text file, creating it (and missing parent directories) or replacing "
        "its whole content. To change part of an existing file, prefer `edit`."
    )
    args_model = WriteArgs

    async def call(self, args: WriteArgs, ctx: ToolContext) -> ToolOutput:
        path = resolve_path(ctx, args.file_path)
        data = args.content.encode("utf-8")
        created = await asyncio.to_thread(atomic_write, path, data)
        lines = count_lines(args.content)
        verb = "Created" if created else "Overwrote"
        summary = f"{verb} file: wrote {_plural(len(data), 'byte')}, {_plural(lines, 'line')}"
        meta: dict[str, Any] = {
            "path": str(path.shown),
            "created": created,
            "bytes": len(data),
            "lines": lines,
        }
        return ToolOutput.text(file_report(path, summary), meta=meta)


class EditArgs(ToolArgs):
    file_path: str = Field(description="File to change: relative to the workspace, or absolute.")
    old_string: str = Field(description="The exact text to find, including whitespace and indentation.")
    new_string: str = Field(description="The text to put in its place (empty to delete it).")
    replace_all: bool = Field(
        False, description="Replace every occurrence. Default false: old_string must then occur exactly once."
    )


def _apply_edit(path: ResolvedPath, old: str, new: str, replace_all: bool) -> int:
    """Replace in the file on disk (blocking); returns how many occurrences were replaced."""
    text = read_text(path)
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise tool_error(
            f"old_string was not found in {path.shown}; it must match exactly, whitespace included "
            "(read the file to copy the current text)",
            NO_MATCH,
        )
    if count > 1 and not replace_all:
        raise tool_error(
            f"old_string occurs {count} times in {path.shown}; add surrounding lines to make it "
            "unique, or set replace_all to true",
            AMBIGUOUS_MATCH,
        )
    atomic_write(path, text.replace(old, new).encode("utf-8"))
    return count


class EditTool(BuiltinTool[EditArgs]):
    """Replace exact text in an existing file."""

    name = "edit"
    description = (
        "Change an existing UTF-8 text file by replacing an exact piece of text (`old_string`) "
        "with `new_string`. old_string must occur exactly once unless `replace_all` is true. "
        "Read the file first so old_string matches the current content."
    )
    args_model = EditArgs

    async def call(self, args: EditArgs, ctx: ToolContext) -> ToolOutput:
        path = resolve_path(ctx, args.file_path)
        if not args.old_string:
            raise tool_error("old_string must not be empty (use write to create a file)", INVALID_ARGUMENTS)
        if args.old_string == args.new_string:
            raise tool_error("old_string and new_string are identical; nothing to change", NO_CHANGE)
        count = await asyncio.to_thread(_apply_edit, path, args.old_string, args.new_string, args.replace_all)
        summary = f"Edited file: replaced {_plural(count, 'occurrence')}"
        meta: dict[str, Any] = {"path": str(path.shown), "replacements": count}
        return ToolOutput.text(file_report(path, summary), meta=meta)

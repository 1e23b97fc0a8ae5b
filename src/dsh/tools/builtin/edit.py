"""The ``edit`` tool: exact string replacement in a file the session has read, atomic.

Matching is literal on CRLF→LF-normalized content and strings; a file that had CRLF line
endings gets them back. The guard: a file never read is refused (``edit requires reading
"D" first``), one seen absent is ``not found``, and one changed (or gone) since it was
seen is stale. Success says ``The file D has been updated successfully.`` (or, with
``replace_all``, ``... All occurrences were successfully replaced.``); the meta is one
``{path, oldText, newText}`` hunk with 3 lines of context.
"""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from dsh.tools.base import Tool, ToolContext, ToolLocation, ToolOutput
from dsh.tools.builtin._base import (
    atomic_write,
    decode_text,
    file_locations,
    file_title,
    not_found,
    not_regular,
    os_failure,
    quoted,
    real_key,
    stat_file,
)
from dsh.tools.builtin.diffs import DIFF_BASIS_MAX_BYTES, edit_diff
from dsh.tools.builtin.write import stale
from dsh.tools.codes import FS_AMBIGUOUS_EDIT, FS_EDIT_NOT_FOUND, FS_NOT_OBSERVED, tool_error
from dsh.tools.escalation import Escalation, escalate, justification_field, permissions_field
from dsh.tools.observations import Absent, FileObservations, file_version
from dsh.tools.sandbox import check_file_write
from dsh.tools.schema import ToolArgs
from dsh.tools.workspace import ResolvedPath, resolve_path, workspace_root


class EditArgs(ToolArgs):
    file_path: str = Field(description="File to change: relative to the workspace, or absolute.")
    old_string: str = Field(description="The exact text to find, including whitespace and indentation.")
    new_string: str = Field(description="The text to put in its place (empty to delete it).")
    replace_all: bool | None = Field(
        None, description="Replace every occurrence. Default false: old_string must then occur exactly once."
    )
    sandbox_permissions: Escalation | None = permissions_field("file operation")
    justification: str | None = justification_field("file operation")


def _edit(
    path: ResolvedPath,
    raw_path: str,
    old: str,
    new: str,
    replace_all: bool,
    files: FileObservations,
    diff_max: int,
) -> dict[str, Any] | None:
    """Replace in the file on disk (blocking) under the guard; returns the meta hunk."""
    key = real_key(path)
    seen = files.get(key)
    if seen is None:
        raise tool_error(
            f"edit requires reading {quoted(path)} first — read the file, then retry", FS_NOT_OBSERVED
        )
    if isinstance(seen, Absent):
        raise not_found("edit", path)
    st = stat_file("edit", path)
    if st is None or file_version(st) != seen.version:
        raise stale("edit", path, "file changed since it was read")
    if not stat.S_ISREG(st.st_mode):
        raise not_regular("edit", path)
    try:
        data = path.real.read_bytes()
    except OSError as exc:
        raise os_failure("edit", path, exc) from exc
    text = decode_text("edit", path, data)
    crlf = "\r\n" in text
    content = text.replace("\r\n", "\n")
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    count = content.count(old)
    if count == 0:
        raise tool_error(f"old_string was not found in {quoted(path)}", FS_EDIT_NOT_FOUND)
    if count > 1 and not replace_all:
        raise tool_error(
            f"old_string matched {count} times in {quoted(path)}; provide a more specific old_string "
            "or set replace_all to true",
            FS_AMBIGUOUS_EDIT,
        )
    updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
    written = updated.replace("\n", "\r\n") if crlf else updated
    new_st = atomic_write(path, written.encode("utf-8"), stat.S_IMODE(st.st_mode))
    files.saw_present(key, new_st)
    if len(data) >= diff_max or new_st.st_size >= diff_max:
        return None
    return edit_diff(raw_path, content, updated)


class EditTool(Tool[EditArgs]):
    """Replace exact text in a file the session has read."""

    name = "edit"
    description = (
        "Change an existing UTF-8 text file by replacing an exact piece of text (`old_string`) "
        "with `new_string`. old_string must occur exactly once unless `replace_all` is true. "
        "Read the file first (it must not have changed since) so old_string matches the "
        "current content."
    )
    args_model = EditArgs
    acp_kind = "edit"

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        return file_title("Edit", args)

    def acp_locations(self, args: Mapping[str, Any]) -> tuple[ToolLocation, ...]:
        return file_locations(args)

    def __init__(self, *, diff_basis_max_bytes: int = DIFF_BASIS_MAX_BYTES) -> None:
        self.diff_basis_max_bytes = diff_basis_max_bytes

    async def call(self, args: EditArgs, ctx: ToolContext) -> ToolOutput:
        if not args.old_string:
            raise tool_error("old_string must be a non-empty string")
        if args.old_string == args.new_string:
            raise tool_error("old_string and new_string must differ")
        ctx = await escalate(
            ctx,
            self.name,
            args.sandbox_permissions,
            args.justification,
            what="operation",
            path=args.file_path,
        )
        path = resolve_path(ctx, args.file_path, writing=True)
        check_file_write(ctx.sandbox, path.real, workspace_root(ctx))
        replace_all = bool(args.replace_all)
        meta = await asyncio.to_thread(
            _edit,
            path,
            args.file_path,
            args.old_string,
            args.new_string,
            replace_all,
            ctx.files,
            self.diff_basis_max_bytes,
        )
        if replace_all:
            text = f"The file {path.shown} has been updated. All occurrences were successfully replaced."
        else:
            text = f"The file {path.shown} has been updated successfully."
        return ToolOutput.text(text, meta=meta)

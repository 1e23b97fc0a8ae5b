"""The ``write`` tool: whole-file writes, atomic, behind the read-before-mutate guard.

A file the session saw *present* is replaced only at the version it saw; otherwise
``write`` may only create (``cannot overwrite existing "D" without reading it first``).
The answer is the original's ``<path>…</path><type>file</type><content>Created file`` (or
``Updated file``); the meta lists the unified-diff hunks of an update.
"""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Mapping
from typing import Any, Final

from pydantic import Field

from dsh.errors import ToolError
from dsh.tools.base import Tool, ToolContext, ToolLocation, ToolOutput
from dsh.tools.builtin._base import (
    atomic_write,
    file_locations,
    file_report,
    file_title,
    not_regular,
    os_failure,
    quoted,
    real_key,
    stat_file,
)
from dsh.tools.builtin.diffs import DIFF_BASIS_MAX_BYTES, write_diffs
from dsh.tools.codes import FS_NOT_OBSERVED, FS_STALE_VERSION, tool_error
from dsh.tools.escalation import Escalation, escalate, justification_field, permissions_field
from dsh.tools.observations import FileObservations, Present, file_version
from dsh.tools.sandbox import check_file_write
from dsh.tools.schema import ToolArgs
from dsh.tools.workspace import ResolvedPath, resolve_path, workspace_root

REREAD: Final = " — re-read the file, then retry"


def stale(action: str, path: ResolvedPath, what: str) -> ToolError:
    """The original's ``FS_STALE_VERSION`` refusal."""
    return tool_error(f"cannot {action} {quoted(path)}: {what}{REREAD}", FS_STALE_VERSION)


class WriteArgs(ToolArgs):
    file_path: str = Field(description="File to create or replace: relative to the workspace, or absolute.")
    content: str = Field(description="The complete new content of the file (UTF-8 text).")
    sandbox_permissions: Escalation | None = permissions_field("file operation")
    justification: str | None = justification_field("file operation")


def _write(
    path: ResolvedPath, raw_path: str, content: str, files: FileObservations, diff_max: int
) -> tuple[bool, list[dict[str, Any]]]:
    """Write (blocking) under the guard; returns (created, diff hunks)."""
    key = real_key(path)
    st = stat_file("write", path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise not_regular("write", path)
    seen = files.get(key)
    data = content.encode("utf-8")
    old_text: str | None = None
    if isinstance(seen, Present):
        if st is None:
            raise stale("write", path, "file no longer exists")
        if file_version(st) != seen.version:
            raise stale("write", path, "file changed since it was read")
        if st.st_size < diff_max and len(data) < diff_max:
            try:
                old_text = path.real.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                raise os_failure("write", path, exc) from exc
    elif st is not None:
        raise tool_error(
            f"cannot overwrite existing {quoted(path)} without reading it first — read the file, then retry",
            FS_NOT_OBSERVED,
        )
    new_st = atomic_write(path, data, None if st is None else stat.S_IMODE(st.st_mode))
    files.saw_present(key, new_st)
    diffs = [] if old_text is None else write_diffs(raw_path, old_text, content)
    return st is None, diffs


class WriteTool(Tool[WriteArgs]):
    """Create a text file, or replace one the session has read (parents created, temp file + rename)."""

    name = "write"
    description = (
        "Write a UTF-8 text file, creating it (and missing parent directories) or replacing "
        "its whole content. An existing file must be read first, and must not have changed "
        "since. To change part of a file, prefer `edit`."
    )
    args_model = WriteArgs
    acp_kind = "edit"

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        return file_title("Write", args)

    def acp_locations(self, args: Mapping[str, Any]) -> tuple[ToolLocation, ...]:
        return file_locations(args)

    def __init__(self, *, diff_basis_max_bytes: int = DIFF_BASIS_MAX_BYTES) -> None:
        self.diff_basis_max_bytes = diff_basis_max_bytes

    async def call(self, args: WriteArgs, ctx: ToolContext) -> ToolOutput:
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
        created, diffs = await asyncio.to_thread(
            _write, path, args.file_path, args.content, ctx.files, self.diff_basis_max_bytes
        )
        summary = "Created file" if created else "Updated file"
        return ToolOutput.text(file_report(path, summary), meta={"diffs": diffs})

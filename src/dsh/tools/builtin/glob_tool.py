"""The ``glob`` tool: paths matching a pattern under a directory, sorted and capped.

Matches are listed one per line, relative to the workspace when inside it (absolute
otherwise), directories with a trailing ``/``. Matches whose real path leaves the
workspace (through a symlink or ``..``) are left out unless outside access is allowed.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.builtin._base import BuiltinTool, os_failure
from dsh.tools.codes import INVALID_ARGUMENTS, NOT_A_DIRECTORY, NOT_FOUND, tool_error
from dsh.tools.schema import ToolArgs
from dsh.tools.workspace import ResolvedPath, real_workspace_root, resolve_path


class GlobArgs(ToolArgs):
    pattern: str = Field(
        description="Glob pattern relative to `path`, e.g. `*.py`, `src/**/*.ts` (`**` spans directories)."
    )
    path: str = Field(
        ".", description="Directory to search in, relative to the workspace. Default: the workspace."
    )


@dataclass(slots=True)
class _Found:
    paths: list[str] = field(default_factory=list)
    truncated: bool = False
    left_out: int = 0


def _search(base: ResolvedPath, pattern: str, root: Path, confine: bool, cap: int) -> _Found:
    if not base.real.exists():
        raise tool_error(f"directory not found: {base.shown}", NOT_FOUND)
    if not base.real.is_dir():
        raise tool_error(f"{base.shown} is not a directory", NOT_A_DIRECTORY)
    found = _Found()
    try:
        for match in base.real.glob(pattern):
            real = Path(os.path.realpath(match))
            inside = real.is_relative_to(root)
            if confine and not inside:
                found.left_out += 1
                continue
            if len(found.paths) >= cap:
                found.truncated = True
                break
            lexical = Path(os.path.normpath(match))
            shown = str(lexical.relative_to(root)) if lexical.is_relative_to(root) else str(lexical)
            found.paths.append(shown + "/" if match.is_dir() else shown)
    except ValueError as exc:
        raise tool_error(f"invalid glob pattern {pattern!r}: {exc}", INVALID_ARGUMENTS) from exc
    except OSError as exc:
        raise os_failure("search", base, exc) from exc
    found.paths.sort()
    return found


class GlobTool(BuiltinTool[GlobArgs]):
    """Find files by glob pattern."""

    name = "glob"
    description = (
        "Find files and directories whose paths match a glob pattern, searched under `path` "
        "(default: the workspace). Returns matching paths sorted, one per line, relative to the "
        "workspace; directories end with `/`. Use `**` to search subdirectories recursively."
    )
    args_model = GlobArgs
    concurrency_safe = True

    def __init__(self, *, max_results: int = 1_000) -> None:
        self.max_results = max_results

    async def call(self, args: GlobArgs, ctx: ToolContext) -> ToolOutput:
        if not args.pattern.strip():
            raise tool_error("pattern must not be empty", INVALID_ARGUMENTS)
        if Path(args.pattern).is_absolute():
            raise tool_error(
                f"pattern {args.pattern!r} is absolute; make it relative and put the directory in path",
                INVALID_ARGUMENTS,
            )
        base = resolve_path(ctx, args.path, argument="path")
        root = real_workspace_root(ctx)
        found = await asyncio.to_thread(
            _search, base, args.pattern, root, not ctx.allow_outside_workspace, self.max_results
        )
        notes: list[str] = []
        if found.truncated:
            notes.append(f"(results capped at {self.max_results} paths; narrow the pattern or the path)")
        if found.left_out:
            notes.append(f"({found.left_out} matches outside the workspace were left out)")
        lines = found.paths or ["(no matches)"]
        meta: dict[str, Any] = {"count": len(found.paths), "truncated": found.truncated}
        return ToolOutput.text("\n".join(lines + notes), meta=meta)

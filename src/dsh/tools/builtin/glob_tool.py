"""The ``glob`` tool: files matching a pattern under a directory, oldest first, as the original lists them.

The original runs ``rg --files --glob=<pattern> --sort=modified --no-ignore --hidden``
without ``.git .svn .hg .bzr .jj .sl``. So: files only (no directories, no symlinks — a
symlinked directory is never entered, whether it leads out of the workspace or not), at any
depth under ``path``, hidden ones included, ignore files not consulted; sorted by
modification time, oldest first; shown relative to the session cwd. The pattern follows
gitignore rules: without a ``/`` (other than a trailing one) it matches a file name at any
depth, otherwise the path relative to ``path`` (a leading ``/`` anchors); ``*``, ``?``,
``[...]``, ``{a,b}`` and ``**`` work as in ripgrep.

Answers: ``No files found``; the paths joined by ``\\n``; or, over the cap (default 100),
a sample across the top-level entries with the original's footer (``glob_sample``; with
``sample_over_cap=False`` the oldest ``cap`` paths and ``(Showing K of N paths. …)``).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import Field

from dsh.tools.base import Tool, ToolContext, ToolOutput, arg_text
from dsh.tools.builtin._base import os_failure, quoted
from dsh.tools.builtin.glob_sample import over_cap
from dsh.tools.codes import FS_NOT_FOUND, tool_error
from dsh.tools.schema import ToolArgs
from dsh.tools.workspace import ResolvedPath, resolve_path, workspace_root

MAX_RESULTS: Final = 100
SKIPPED_DIRS: Final = frozenset({".git", ".svn", ".hg", ".bzr", ".jj", ".sl"})


class GlobArgs(ToolArgs):
    pattern: str = Field(
        description="Glob pattern, e.g. `*.py` (any depth) or `src/**/*.ts` (relative to `path`)."
    )
    path: str | None = Field(None, description="Directory to search in. Default: the workspace.")


def _brace_options(body: str) -> list[str]:
    options, depth, start = [], 0, 0
    for i, char in enumerate(body):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            options.append(body[start:i])
            start = i + 1
    options.append(body[start:])
    return options


def _closing(pattern: str, start: int, opener: str, closer: str) -> int:
    depth = 0
    for i in range(start, len(pattern)):
        if pattern[i] == opener:
            depth += 1
        elif pattern[i] == closer:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**", i):
            at_start = i == 0 or pattern[i - 1] == "/"
            if at_start and pattern.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
                continue
            if at_start and i + 2 == len(pattern):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif char == "{" and (end := _closing(pattern, i, "{", "}")) != -1:
            options = _brace_options(pattern[i + 1 : end])
            out.append("(?:" + "|".join(_translate(option) for option in options) + ")")
            i = end + 1
        elif char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex for paths relative to the search root, with gitignore's anchoring rules."""
    anchored = "/" in pattern.rstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    body = pattern.lstrip("/") if anchored else "**/" + pattern
    try:
        return re.compile(_translate(body), re.DOTALL)
    except re.error as exc:
        raise tool_error(f"invalid glob pattern {pattern!r}: {exc}") from exc


def _search(base: ResolvedPath, matcher: re.Pattern[str], root: Path) -> list[str]:
    """Every matching regular file under ``base``, oldest first, relative to ``root`` (blocking)."""
    if not base.real.exists():
        raise tool_error(f"cannot search {quoted(base)}: not found", FS_NOT_FOUND)
    if not base.real.is_dir():
        raise tool_error(f"cannot search {quoted(base)}: not a directory", FS_NOT_FOUND)
    found: list[tuple[int, str]] = []
    stack = [(str(base.real), "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            if directory == str(base.real):
                raise os_failure("search", base, exc) from exc
            continue
        for entry in entries:
            rel = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS:
                        stack.append((entry.path, rel + "/"))
                elif entry.is_file(follow_symlinks=False) and matcher.fullmatch(rel):
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, rel))
            except OSError:
                continue
    found.sort()
    return [os.path.relpath(Path(base.shown) / rel, root) for _mtime, rel in found]


class GlobTool(Tool[GlobArgs]):
    """Find files by glob pattern."""

    name = "glob"
    description = (
        "Find files whose paths match a glob pattern under `path` (default: the workspace). "
        "A pattern without `/` matches file names at any depth (`*.py`); one with `/` matches "
        "paths relative to `path` (`src/**/*.ts`). Returns paths relative to the workspace, "
        "oldest modification first, one per line."
    )
    args_model = GlobArgs
    concurrency_safe = True
    acp_kind = "search"

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        pattern = arg_text(args, "pattern")
        return f"Glob {pattern}" if pattern else None

    def __init__(self, *, max_results: int = MAX_RESULTS, sample_over_cap: bool = True) -> None:
        self.max_results = max_results
        self.sample_over_cap = sample_over_cap

    async def call(self, args: GlobArgs, ctx: ToolContext) -> ToolOutput:
        if not args.pattern.strip():
            raise tool_error("pattern must be a non-empty string")
        if args.path is not None and not args.path.strip():
            raise tool_error("path must be a non-empty string when given")
        matcher = compile_glob(args.pattern)
        base = resolve_path(ctx, args.path or ".", argument="path")
        root = workspace_root(ctx)
        paths = await asyncio.to_thread(_search, base, matcher, root)
        truncated = len(paths) > self.max_results
        if truncated:
            search_root = await asyncio.to_thread(os.path.relpath, base.shown, root)
            shown, text = over_cap(paths, search_root, self.max_results, sampled=self.sample_over_cap)
        else:
            shown, text = paths, "\n".join(paths)
        meta: dict[str, Any] = {"shape": "paths", "paths": shown, "truncated": truncated, "total": len(paths)}
        if not paths:
            return ToolOutput.text("No files found", meta=meta)
        return ToolOutput.text(text, meta=meta)

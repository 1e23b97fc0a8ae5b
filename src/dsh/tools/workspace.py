"""Workspace confinement: resolving a model-given path and refusing ones that leave ``ctx.cwd``.

A path is resolved against the workspace (``ctx.cwd``) when relative and ``..`` is folded
lexically: that is the path messages show (the original's ``resolve(cwd, path)``; ``~`` is
not expanded, as in the original). The result is then resolved through symlinks; file I/O
always uses that real path, so what is checked is what is touched. Unless
``ctx.allow_outside_workspace`` is set, a real path outside the real workspace is refused
with ``OUTSIDE_WORKSPACE`` (reads may also open files under ``ctx.readable_roots``). A write
under a confined sandbox policy is not checked here: the policy's fence decides
(:func:`~dsh.tools.sandbox.check_file_write`, the original's ``FS_SANDBOX_DENIED`` with its
escalation hint), so the model can escalate it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dsh.tools.base import ToolContext
from dsh.tools.codes import OUTSIDE_WORKSPACE, tool_error


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    """A model-given path: ``shown`` (absolute, as messages show it) and ``real`` (for I/O)."""

    shown: Path
    real: Path


def workspace_root(ctx: ToolContext) -> Path:
    """The workspace as an absolute path (not symlink-resolved)."""
    return Path(os.path.abspath(ctx.cwd))


def real_workspace_root(ctx: ToolContext) -> Path:
    """The workspace with symlinks resolved: the boundary paths are checked against."""
    return Path(os.path.realpath(ctx.cwd))


def is_inside(real: Path, ctx: ToolContext) -> bool:
    """Whether the already-resolved ``real`` lies inside the (resolved) workspace."""
    return real.is_relative_to(real_workspace_root(ctx))


def is_readable_elsewhere(real: Path, ctx: ToolContext) -> bool:
    """Whether ``real`` lies under one of ``ctx.readable_roots`` (e.g. the spill directory)."""
    return any(real.is_relative_to(os.path.realpath(root)) for root in ctx.readable_roots)


def resolve_path(
    ctx: ToolContext, raw: str, *, argument: str = "file_path", reading: bool = False, writing: bool = False
) -> ResolvedPath:
    """Resolve ``raw`` for ``ctx``; raise a ``ToolError`` when it is empty or leaves the workspace.

    With ``reading``, a path under one of ``ctx.readable_roots`` is allowed too; with
    ``writing`` under a confined sandbox policy, the policy's fence decides instead.
    """
    if not raw.strip():
        raise tool_error(f"{argument} must be a non-empty string")
    if "\x00" in raw:
        raise tool_error(f"{argument} must not contain a NUL character")
    root = workspace_root(ctx)
    shown = Path(os.path.normpath(root / raw))
    real = Path(os.path.realpath(shown))
    allowed = is_inside(real, ctx) or (reading and is_readable_elsewhere(real, ctx))
    fenced = writing and ctx.sandbox is not None and ctx.sandbox.confined
    if not ctx.allow_outside_workspace and not allowed and not fenced:
        if shown.is_relative_to(root):
            reason = f"{shown} resolves through a symlink to {real}, which is outside the workspace {root}"
        else:
            reason = f"{shown} is outside the workspace {root}"
        raise tool_error(f"{reason}; only paths inside the workspace are allowed", OUTSIDE_WORKSPACE)
    return ResolvedPath(shown=shown, real=real)

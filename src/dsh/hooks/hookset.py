"""HookSet: where a session's hooks come from — the user-level directory and the session cwd.

For each dialect, the files are ``<user dir>/hooks.json`` (Claude Code) and
``<user dir>/codex-hooks.json`` (Codex), then the same names in the session's cwd; their
groups run in that order. The user dir is ``$DSH_HOME`` or ``~/.dsh``
(:meth:`HookSet.from_environment`); ``HookSet()`` reads the session cwd only (what replays
and recordings use, so a developer's own hooks never change a replay). Files are read
once per HookSet (the user dir once, each cwd the first time a session there fires).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

from dsh.home import dsh_home
from dsh.hooks.config import DIALECTS, FILE_NAMES, HookFile, load_hook_file
from dsh.hooks.payload import Subject
from dsh.hooks.session import Append, SessionHooks
from dsh.tools.redaction import NO_REDACTION, Redaction
from dsh.tools.sandbox import SandboxPolicy


def user_hooks_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$DSH_HOME`` if set and non-empty, else ``~/.dsh`` (:func:`dsh.home.dsh_home`)."""
    return dsh_home(env)


def _absolute(path: str | Path) -> str:
    return os.path.abspath(path)


def _read_dir(directory: Path) -> tuple[HookFile, ...]:
    found = (load_hook_file(directory / FILE_NAMES[d], d) for d in DIALECTS)
    return tuple(f for f in found if f is not None)


class HookSet:
    """The hook files sessions run (see the module docstring). Put one on ``AgentConfig.hooks``;
    subagent children share their parent's config, so their hooks fire too."""

    def __init__(self, *, user_dir: Path | None = None) -> None:
        self.user_dir = user_dir
        self._user: tuple[HookFile, ...] | None = None
        self._by_cwd: dict[str, tuple[HookFile, ...]] = {}

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> HookSet:
        """The user-level files of :func:`user_hooks_dir` plus each session cwd's."""
        return cls(user_dir=user_hooks_dir(env))

    def __repr__(self) -> str:
        return f"HookSet(user_dir={self.user_dir!r})"

    async def files_for(self, cwd: str | Path) -> tuple[HookFile, ...]:
        """The valid files for a session in ``cwd``: user-level first, then the workspace's."""
        if self._user is None:
            self._user = await asyncio.to_thread(_read_dir, self.user_dir) if self.user_dir else ()
        key = _absolute(cwd)
        workspace = self._by_cwd.get(key)
        if workspace is None:
            same = self.user_dir is not None and _absolute(self.user_dir) == key
            workspace = () if same else await asyncio.to_thread(_read_dir, Path(key))
            self._by_cwd[key] = workspace
        return (*self._user, *workspace)

    async def for_session(
        self,
        session_id: str,
        cwd: str | Path,
        *,
        model: str = "",
        append: Append,
        sandbox: SandboxPolicy | None = None,
        redaction: Redaction = NO_REDACTION,
    ) -> SessionHooks | None:
        """The hooks of one session (run under its ``sandbox`` policy, ``redaction``'s secrets
        scrubbed from their outputs), or ``None`` when no file configures any."""
        files = await self.files_for(cwd)
        if not any(f.events for f in files):
            return None
        subject = Subject(session_id, _absolute(cwd), model)
        return SessionHooks(files, subject=subject, append=append, sandbox=sandbox, redaction=redaction)

"""Workspace instructions (AGENTS.md, CLAUDE.md) told to the model, as the original does.

:class:`InstructionTracker` runs one *pass* at every pre-step of a session. The log is the
state: the instruction messages still visible on the surface (a later ``surfaceOp`` replace,
a compaction, shadows one) say which baseline and which files the model has seen. A pass

1. re-sends the baseline (the user-global file, then every directory from the project root
   down to the cwd) when no visible baseline has this configuration's identity — the first
   step of a session, and again after a compaction shadowed it;
2. adds ``set`` sections for files in the directories a successful ``read`` / ``write`` /
   ``edit`` reached below the cwd, ``replace`` for a visible file that changed and ``remove``
   for one that vanished.

Both land in one message (one text block each) with source ``{kind: "agent-instructions",
form: "instructions", [baseline, baselineIdentity,] changes}``; each block fits
``maxBytes`` (:mod:`dsh.context.render`), a change that does not fit is retried later.
"""

from __future__ import annotations

import os
from itertools import chain
from pathlib import Path
from typing import Any, Final, cast

from dsh import jsonx
from dsh.context.config import InstructionsConfig, WorkspaceConfig
from dsh.context.files import (
    GLOBAL_DIR,
    InstructionFile,
    baseline_files,
    directory_files,
    project_root,
    read_file,
    relative_root,
    touched_dirs,
)
from dsh.context.folds import FoldMark
from dsh.context.render import Change, render
from dsh.events.messages import Message, Source, text_block
from dsh.events.vocabulary import SURFACE_TYPES, TOOL_CALL, TOOL_RESULT, USER_MESSAGE
from dsh.ids import new_message_id
from dsh.session import Session

KIND: Final = "agent-instructions"
TRIGGERS: Final = frozenset({"read", "write", "edit"})


def shadowed_seqs(session: Session, since: int = 0) -> set[int]:
    """Seqs a later ``surfaceOp`` replace took off the surface (a compaction); ``since``: by
    the replaces from that seq on only."""
    out: set[int] = set()
    events = chain.from_iterable(session.of_type(t, since=since) for t in SURFACE_TYPES)
    for event in events:  # the events that carry one, type by type: a set needs no log order
        op = event.surface_op
        if isinstance(op, dict) and op.get("op") == "replace":
            start, end = op.get("start"), op.get("end")
            if type(start) is int and type(end) is int:
                out.update(range(start, end + 1))
    return out


def _source(message: object) -> dict[str, Any] | None:
    """The source of an instructions message, ``None`` for any other user message (a walk's
    hot path: tens of thousands of prompts in a long session, each ``source: {kind: "user"}``)."""
    source = message.get("source") if type(message) is dict else None
    return source if type(source) is dict and source.get("kind") == KIND else None


class InstructionTracker:
    """One session's instruction passes (see the module docstring)."""

    def __init__(self, workspace: WorkspaceConfig, config: InstructionsConfig, cwd: Path) -> None:
        self._workspace = workspace
        self._config = config
        self._cwd = cwd
        self._root = project_root(cwd, config.project_root_markers)
        self._identity = config.identity(relative_root(cwd, self._root))
        self._reached: dict[Path, None] = {}
        self._calls: dict[str, str] = {}
        self._scanned = 0
        self._folded = FoldMark()
        self._baseline = False
        self._scopes: dict[str, tuple[str, str]] = {}

    def _scan(self, session: Session) -> None:
        """Note the directories reached by successful file tools since the last pass."""
        for event in session.of_type(TOOL_CALL, TOOL_RESULT, since=self._scanned):
            data = event.data if isinstance(event.data, dict) else {}
            if event.type == TOOL_CALL and data.get("name") in TRIGGERS:
                path = _file_path(data.get("arguments"))
                if path:
                    self._calls[str(data.get("callId"))] = path
            elif event.type == TOOL_RESULT:
                message = data.get("message", {})
                blocks = message.get("content", []) if isinstance(message, dict) else []
                for block in blocks:
                    if isinstance(block, dict) and block.get("type") == "tool-result":
                        path = self._calls.pop(str(block.get("toolCallId")), None)
                        if path and block.get("isError") is False:
                            for folder in touched_dirs(self._cwd, path):
                                self._reached.setdefault(folder)
        self._scanned = session.next_seq

    def _visible(self, session: Session, hidden: set[int]) -> tuple[bool, dict[str, tuple[str, str]]]:
        """Whether a baseline of this identity is visible, and the visible scopes (path, digest).

        The user messages are folded once: a later pass folds those appended since, unless
        ``hidden`` grew (a compaction shadowed some: folded again from the start)."""
        since = self._folded.since(session, len(hidden))
        if since == 0:
            self._baseline, self._scopes = False, {}
        baseline, scopes = self._baseline, self._scopes
        for event in session.of_type(USER_MESSAGE, since=since):
            source = _source(event.data)
            if source is None or event.seq in hidden:
                continue
            if source.get("baseline") is True:
                baseline = source.get("baselineIdentity") == self._identity
            for change in source.get("changes", ()):
                scope, action = change.get("scope"), change.get("action")
                if not isinstance(scope, str):
                    continue
                if action == "remove":
                    scopes.pop(scope, None)
                else:
                    scopes[scope] = (str(change.get("path")), str(change.get("digest")))
        self._baseline = baseline
        self._folded.reached(session, len(hidden))
        return baseline, dict(scopes)

    def _reprobe(self, scope: str, path: str) -> InstructionFile | None:
        folder, _, name = scope.partition("\0")
        where = (
            self._workspace.homes(self._cwd)[0] / name if folder == GLOBAL_DIR else self._root / folder / name
        )
        text = read_file(where, self._config.max_source_bytes)
        if text is None:
            return None
        return next(
            (f for f in directory_files(self._root, where.parent, self._config) if f.scope == scope),
            InstructionFile(scope, path, text, ""),
        )

    def step(self, session: Session, hidden: set[int]) -> Message | None:
        """The message this pre-step appends, or ``None`` (``hidden``: :func:`shadowed_seqs`)."""
        if not self._config.enabled:
            return None
        self._scan(session)
        has_baseline, visible = self._visible(session, hidden)
        blocks: list[str] = []
        changes: list[Change] = []
        sent: set[str] = set()
        if not has_baseline:
            files = baseline_files(self._cwd, self._workspace, self._config)
            if files:
                text, kept = render(
                    [Change("set", f) for f in files], baseline=True, max_bytes=self._config.max_bytes
                )
                blocks.append(text)
                changes += kept
                sent = {c.file.scope for c in kept}
        delta = self._delta(visible, sent)
        if delta:
            text, kept = render(delta, baseline=False, max_bytes=self._config.max_bytes)
            blocks.append(text)
            changes += kept
        if not blocks:
            return None
        source: dict[str, Any] = {"kind": KIND, "form": "instructions"}
        if not has_baseline and sent:
            source["baseline"] = True
            source["baselineIdentity"] = self._identity
        source["changes"] = [
            {"action": c.action, "scope": c.file.scope, "path": c.file.path, "digest": c.file.digest}
            for c in changes
        ]
        return {
            "content": [text_block(b) for b in blocks],
            "source": cast(Source, source),
            "role": "user",
            "id": new_message_id(),
        }

    def _delta(self, visible: dict[str, tuple[str, str]], sent: set[str]) -> list[Change]:
        out: list[Change] = []
        seen = set(sent)
        for scope, (path, digest) in visible.items():
            if scope in seen:
                continue
            seen.add(scope)
            now = self._reprobe(scope, path)
            if now is None:
                out.append(Change("remove", InstructionFile(scope, path, "", digest)))
            elif now.digest != digest:
                out.append(Change("replace", now))
        for folder in self._reached:
            for found in directory_files(self._root, folder, self._config):
                if found.scope not in seen:
                    seen.add(found.scope)
                    out.append(Change("set", found))
        return out


def _file_path(arguments: object) -> str | None:
    try:
        parsed = jsonx.loads(arguments) if isinstance(arguments, str) and arguments else arguments
    except ValueError:
        return None
    value = parsed.get("file_path") if isinstance(parsed, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _relative(path: Path, root: Path) -> str:
    return os.path.relpath(path, root)

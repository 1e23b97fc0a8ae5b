"""A scenario's recorded files on disk: portable logs, and writes that never destroy a recording.

A new recording is staged whole in a hidden sibling directory (``.NAME.recording-*``: the
scenario's other files copied, the new logs and transcript written), then swapped in with
two renames; the previous directory is removed only after the swap. A crash between the two
renames leaves ``.NAME.previous-*`` and no ``NAME``; :func:`recover` (run before every
scenario) puts it back, and stale staging directories are removed.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.events import encode_event
from dsh.events.lineage import below as lineage_below
from dsh.replay.layout import PRIMARY
from dsh.store import LoadedSession
from dsh.store.logfile import encode_log

TRANSCRIPT = "transcript.expected.jsonl"
RECORDED = ("session*.jsonl", TRANSCRIPT)
"""What a recording (re)writes; everything else in a scenario directory is kept as it is."""


def _scrub(value: Any, cwd: str) -> Any:
    if isinstance(value, str):
        return value.replace(cwd, "{{cwd}}")
    if isinstance(value, dict):
        return {k: _scrub(v, cwd) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, cwd) for v in value]
    return value


def portable(loaded: LoadedSession, cwd: str) -> LoadedSession:
    """The log with the run's cwd replaced by ``{{cwd}}`` (fixtures carry no machine paths).
    Only an event whose line holds the cwd is walked (JSON escapes character by character:
    a string holding the cwd holds its encoding); the others keep their lines, remembered
    (what :func:`~dsh.store.logfile.encode_log` then writes)."""
    if not cwd:
        return loaded
    header = loaded.header.evolve(cwd="{{cwd}}")
    try:
        needle = jsonx.dumps_unchecked(cwd)[1:-1]
    except TypeError:  # not UTF-8 (a lone surrogate): no event's JSON can hold it
        return LoadedSession(header, loaded.inherited_event_count, loaded.events)
    events = list(loaded.events)
    for i, event in enumerate(events):
        line = encode_event(event)
        if needle in line:
            events[i] = replace(event, data=_scrub(event.data, cwd), data_json=None, line_json=None)
        elif event.line_json is None:
            event.remember_line(line)
    return LoadedSession(header, loaded.inherited_event_count, events)


def descendants(sessions: Mapping[str, LoadedSession], root: str) -> list[LoadedSession]:
    """Every session below ``root`` (children, grandchildren, …) in the order replay binds
    them: by ``createdAt``, ties by id."""

    def children_of(parent: str) -> list[str]:
        return [sid for sid, loaded in sessions.items() if loaded.header.parent_session == parent]

    found = [sessions[sid] for sid in lineage_below(root, children_of)[1:]]  # each once, even on a cycle
    return sorted(found, key=lambda s: (s.header.created_at, s.header.id))


def scenario_logs(sessions: Mapping[str, LoadedSession], root: str, cwd: str) -> dict[str, bytes]:
    """``session.jsonl`` for ``root`` and ``session.N.jsonl`` for each descendant, portable."""
    files = {PRIMARY: encode_log(portable(sessions[root], cwd))}
    for n, child in enumerate(descendants(sessions, root), start=1):
        files[f"session.{n}.jsonl"] = encode_log(portable(child, cwd))
    return files


def _recorded_names(directory: Path) -> set[str]:
    return {p.name for pattern in RECORDED for p in directory.glob(pattern) if p.is_file()}


def recover(directory: Path) -> None:
    """Undo what an interrupted :func:`write_recording` left beside ``directory``."""
    parent, name = directory.parent, directory.name
    if not parent.is_dir():
        return
    for leftover in sorted(parent.glob(f".{name}.previous-*")):
        if not directory.exists():
            os.rename(leftover, directory)
        else:
            shutil.rmtree(leftover, ignore_errors=True)
    for stage in parent.glob(f".{name}.recording-*"):
        shutil.rmtree(stage, ignore_errors=True)


def changed_files(directory: Path, files: Mapping[str, bytes]) -> list[str]:
    """The names ``files`` would add, change or remove among the scenario's recorded files."""
    old = _recorded_names(directory) if directory.is_dir() else set()
    out = [n for n in sorted(files) if n not in old or (directory / n).read_bytes() != files[n]]
    return out + sorted(old - set(files))


def write_recording(directory: Path, files: Mapping[str, bytes]) -> list[str]:
    """Replace the scenario's recorded files by ``files`` as one step; returns what changed."""
    changed = changed_files(directory, files)
    if not changed:
        return []
    token = secrets.token_hex(4)
    stage = directory.parent / f".{directory.name}.recording-{token}"
    previous = directory.parent / f".{directory.name}.previous-{token}"
    recorded = _recorded_names(directory)
    shutil.copytree(
        directory, stage, symlinks=True, ignore=lambda d, names: recorded if d == str(directory) else []
    )
    try:
        for name, data in files.items():
            (stage / name).write_bytes(data)
        _fsync_tree(stage)
        os.rename(directory, previous)
        os.rename(stage, directory)
    except BaseException:
        if previous.exists() and not directory.exists():
            os.rename(previous, directory)
        shutil.rmtree(stage, ignore_errors=True)
        raise
    shutil.rmtree(previous, ignore_errors=True)
    return changed


def write_failed(directory: Path, files: Mapping[str, bytes]) -> Path:
    """Write a failed recording beside the scenario, as ``NAME.failed/``, for inspection."""
    target = directory.parent / f"{directory.name}.failed"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    for name, data in files.items():
        (target / name).write_bytes(data)
    return target


def _fsync_tree(root: Path) -> None:
    for path in [*root.iterdir(), root]:
        if path.is_file() or path == root:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

"""Creating and deleting JSONL session files atomically, and cleaning up after a crash.

- One file: written to ``<root>/.<name>.<random>.tmp`` (held under ``flock`` while it
  exists), fsynced, then hard-linked into place (never overwriting), so a half-created
  session never appears.
- A batch (``create_batch``, ``dsh sessions import A B C``): every file is staged in a
  directory ``<root>/.import-<random>.tmp`` (held under ``flock`` on its ``lock`` file)
  with a ``manifest`` naming each target and the staged file's inode. Then each file is
  linked into place; removing the manifest is the commit point. A failure unlinks what was
  placed; a writer that died (SIGKILL) before the commit leaves the manifest behind, and
  the next open of the store (:func:`recover`) unlinks every target that is still the
  staged inode, so the batch is all-or-nothing.
- A delete (:func:`delete_files`, ``dsh sessions rm``): a directory
  ``<root>/.delete-<random>.tmp`` (held under ``flock`` on its ``lock`` file) gets a
  ``manifest`` of the file names, written whole and renamed into place — the commit point.
  Then each file is unlinked and the directory removed. A deleter that died after the commit
  leaves the manifest behind, and the next open (:func:`recover`) finishes the delete at once
  (no age wait: the lock tells whether the deleter is alive), so a delete is all-or-nothing
  for every reader that goes through a store handle.
- :func:`recover` also removes temp files and staging directories whose writer is gone:
  unlocked and older than :data:`STALE_AFTER_S` (the age covers the instant between
  creating a temp file and locking it).

All functions here are blocking (run them off the event loop) and raise ``OSError``; the
caller maps it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import orjson

from dsh import jsonx
from dsh.store.logfile import FILE_MODE, create_temp, fsync_dir

try:  # POSIX only
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - non-POSIX platforms
    _fcntl = None  # type: ignore[assignment]

STAGE_PREFIX: Final = ".import-"
DELETE_PREFIX: Final = ".delete-"
TEMP_SUFFIX: Final = ".tmp"
STALE_AFTER_S: Final = 5.0
"""A temp file or staging directory this old and unlocked belongs to a writer that died."""

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)

ExistsError = Callable[[str], Exception]
"""``exists_error(session_id)``: the exception for a target that already exists."""


def _lock(fd: int, *, block: bool) -> bool:
    """``flock`` ``fd`` exclusively; ``False`` when ``block`` is off and another holds it."""
    if _fcntl is not None:
        try:
            _fcntl.flock(fd, _fcntl.LOCK_EX if block else _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        except BlockingIOError:
            return False
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _place(staged: Path, target: Path, session_id: str, exists_error: ExistsError) -> None:
    """Put ``staged`` at ``target`` without ever replacing an existing file."""
    try:
        os.link(staged, target)
    except FileExistsError:
        raise exists_error(session_id) from None
    except OSError:  # no hard links here: rename after the existence check
        if target.exists():
            raise exists_error(session_id) from None
        os.rename(staged, target)


def _unlink_if(target: Path, inode: int) -> bool:
    """Remove ``target`` only if it is still the file we placed (same inode)."""
    try:
        if os.stat(target).st_ino != inode:
            return False
        os.unlink(target)
    except FileNotFoundError:
        return False
    return True


def publish_file(root: Path, session_id: str, target: Path, data: bytes, exists_error: ExistsError) -> None:
    """Atomically create ``target`` holding ``data``; never overwrite an existing file."""
    root.mkdir(parents=True, exist_ok=True)
    if target.exists():
        raise exists_error(session_id)
    fd, tmp = create_temp(root / target.name, suffix=TEMP_SUFFIX)
    try:
        _lock(fd, block=True)  # uncontended: only a cleaner (non-blocking) could try
        _write_all(fd, data)
        os.fsync(fd)
        _place(tmp, target, session_id, exists_error)
    finally:
        try:
            tmp.unlink(missing_ok=True)
        finally:
            os.close(fd)
    fsync_dir(root)


def publish_batch(root: Path, items: Sequence[tuple[str, Path, bytes]], exists_error: ExistsError) -> None:
    """Create every ``(session_id, target, data)`` file, or none of them (see the module docstring)."""
    root.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, suffix=TEMP_SUFFIX, dir=root))
    lock_fd = os.open(stage / "lock", os.O_RDWR | os.O_CREAT | _CLOEXEC, 0o644)
    try:
        _lock(lock_fd, block=True)
        manifest: list[tuple[str, int]] = []
        for session_id, target, data in items:
            if target.exists():
                raise exists_error(session_id)
            fd = os.open(stage / target.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, FILE_MODE)
            try:
                _write_all(fd, data)
                os.fsync(fd)
                manifest.append((target.name, os.fstat(fd).st_ino))
            finally:
                os.close(fd)
        fd = os.open(stage / "manifest", os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o644)
        try:
            _write_all(fd, jsonx.dumps_unchecked(manifest))
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(stage)
        placed: list[tuple[Path, int]] = []
        try:
            for (session_id, target, _), (name, inode) in zip(items, manifest, strict=True):
                _place(stage / name, target, session_id, exists_error)
                placed.append((target, inode))
            fsync_dir(root)
            os.unlink(stage / "manifest")  # the commit point
            fsync_dir(stage)
        except BaseException:
            for target, inode in placed:
                _unlink_if(target, inode)
            fsync_dir(root)
            raise
    finally:
        try:
            shutil.rmtree(stage, ignore_errors=True)
        finally:
            os.close(lock_fd)


def delete_files(root: Path, names: Sequence[str]) -> None:
    """Unlink every ``root/name``, or none of them (see the module docstring)."""
    stage = Path(tempfile.mkdtemp(prefix=DELETE_PREFIX, suffix=TEMP_SUFFIX, dir=root))
    lock_fd = os.open(stage / "lock", os.O_RDWR | os.O_CREAT | _CLOEXEC, 0o644)
    try:
        _lock(lock_fd, block=True)
        fd = os.open(stage / "manifest.part", os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o644)
        try:
            _write_all(fd, jsonx.dumps_unchecked(list(names)))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(stage / "manifest.part", stage / "manifest")  # the commit point
        fsync_dir(stage)
        _finish_delete(root, stage)
    finally:
        os.close(lock_fd)


def _finish_delete(root: Path, stage: Path) -> int:
    """Unlink every file a committed delete names; return how many were still there."""
    try:
        names = orjson.loads((stage / "manifest").read_bytes())
    except FileNotFoundError:
        names = []  # never committed: nothing was deleted
    removed = 0
    for name in names:
        if isinstance(name, str) and os.path.basename(name) == name and not name.startswith("."):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(root / name)
                removed += 1
    fsync_dir(root)
    shutil.rmtree(stage, ignore_errors=True)
    return removed


def _stale(path: str, now: float) -> bool:
    try:
        return now - os.lstat(path).st_mtime >= STALE_AFTER_S
    except FileNotFoundError:
        return False


def _roll_back(root: Path, stage: Path) -> int:
    """Undo an uncommitted batch of a dead writer; return how many placed files it removed."""
    try:
        manifest = orjson.loads((stage / "manifest").read_bytes())
    except FileNotFoundError:
        manifest = []  # committed, or nothing was placed yet
    except orjson.JSONDecodeError:
        manifest = []  # died while writing the manifest: nothing was placed yet
    removed = sum(_unlink_if(root / name, inode) for name, inode in manifest)
    if removed:
        fsync_dir(root)
    shutil.rmtree(stage, ignore_errors=True)
    return removed


def recover(root: Path, *, check: Callable[[os.DirEntry[str]], None] | None = None) -> list[str]:
    """Remove what dead writers left in ``root``; return one warning per rolled-back import.
    ``check`` sees every entry of ``root`` first (the same listing) and may raise to refuse it."""
    warnings: list[str] = []
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return warnings
    if check is not None:
        for entry in entries:
            check(entry)
    now = time.time()
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
            continue
        manifest = os.path.join(entry.path, "manifest")
        committed_delete = name.startswith(DELETE_PREFIX) and os.path.exists(manifest)
        if not committed_delete and not _stale(entry.path, now):
            continue
        if name.startswith((STAGE_PREFIX, DELETE_PREFIX)) and entry.is_dir(follow_symlinks=False):
            lock_path = os.path.join(entry.path, "lock")
        elif entry.is_file(follow_symlinks=False):
            lock_path = entry.path
        else:
            continue
        try:
            fd = os.open(lock_path, os.O_RDWR | _CLOEXEC)
        except FileNotFoundError:
            fd = -1  # a staging directory whose writer died before creating its lock
        try:
            if fd >= 0 and not _lock(fd, block=False):
                continue  # its writer is alive
            if lock_path == entry.path:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
            elif name.startswith(DELETE_PREFIX):
                removed = _finish_delete(root, Path(entry.path))
                if removed:
                    warnings.append(
                        f"{root}: finished an interrupted delete ({removed} session file(s) removed)"
                    )
            else:
                removed = _roll_back(root, Path(entry.path))
                if removed:
                    warnings.append(
                        f"{root}: rolled back an interrupted import ({removed} session file(s) removed)"
                    )
        finally:
            if fd >= 0:
                os.close(fd)
    return warnings

"""A workspace checkpoint: its manifest (path → content id, size, mode) and how it is taken.

Content-addressed and incremental: each file's bytes are stored once under their sha256
(:class:`Blobs`, e.g. a store's attachments), and a :class:`Checkpointer` remembers each
file's size and modification time, so a file unchanged since its last checkpoint is neither
read nor stored again. What ``bash`` or a terminal wrote is included: the scan reads the
disk, not the tool calls. Left out: ``.git/``, what ``.gitignore`` files ignore, symlinks and
special files, a file over :attr:`Limits.max_file_bytes`, and everything past
:attr:`Limits.max_files` — each recorded in ``Manifest.skipped`` with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from dsh import jsonx
from dsh.errors import CorruptLogError
from dsh.workspace.ignore import Rule, ignored, rules_in

MEDIA_TYPE: Final = "application/vnd.dsh.workspace-manifest+json"
"""How a manifest is stored among the blobs."""
FILE_MEDIA_TYPE: Final = "application/octet-stream"


class Blobs(Protocol):
    """Content-addressed bytes: ``put`` returns ``sha256:<hex>`` of the bytes."""

    async def put(self, data: bytes, media_type: str) -> str:
        """Store ``data`` once under its ``sha256:<hex>`` id (a second put is a no-op); the id."""
        ...

    async def get(self, blob_id: str) -> bytes | None:
        """The bytes stored under ``blob_id`` (``None``: never stored)."""
        ...


@dataclass(frozen=True, slots=True)
class Limits:
    """What a checkpoint holds at most (documented in ``docs/guide/branches.md``)."""

    max_file_bytes: int = 8 * 1024 * 1024
    max_files: int = 20_000
    leave_out: frozenset[str] = frozenset()
    """Absolute paths never checkpointed (a file, or a directory and all under it): the session
    store's own files when it lives in the workspace."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    blob: str
    size: int
    mode: int


@dataclass(slots=True)
class Manifest:
    """The files of one checkpoint, by path relative to the workspace (``/`` separated)."""

    files: dict[str, FileEntry] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> bytes:
        files = {p: {"blob": e.blob, "size": e.size, "mode": e.mode} for p, e in sorted(self.files.items())}
        return jsonx.dumps({"version": 1, "files": files, "skipped": [list(s) for s in self.skipped]})

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Manifest:
        try:
            raw: Any = jsonx.loads(data)
            files = {
                str(p): FileEntry(str(e["blob"]), int(e["size"]), int(e["mode"]))
                for p, e in raw["files"].items()
            }
            skipped = [(str(p), str(r)) for p, r in raw.get("skipped", [])]
        except (jsonx.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptLogError(f"{where}: a workspace manifest that cannot be read") from exc
        return cls(files, skipped)


def blob_id(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Seen:
    """A file as the last checkpoint found it (its stat, its blob)."""

    size: int
    mtime_ns: int
    blob: str


def scan(root: Path, limits: Limits) -> tuple[dict[str, os.stat_result], list[tuple[str, str]]]:
    """The regular files a checkpoint of ``root`` holds (path → stat), and what it skips (blocking)."""
    found: dict[str, os.stat_result] = {}
    skipped: list[tuple[str, str]] = []
    pending: list[tuple[Path, str, list[tuple[str, list[Rule]]]]] = [(root, "", [])]
    while pending:
        directory, prefix, stack = pending.pop()
        rules = rules_in(directory)
        here = [*stack, (prefix, rules)] if rules else stack
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            skipped.append((prefix or ".", f"unreadable directory: {exc.strerror or exc}"))
            continue
        for entry in entries:
            if entry.path in limits.leave_out:
                continue
            rel = prefix + entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if not ignored(here, rel, is_dir=True):
                    pending.append((Path(entry.path), rel + "/", here))
            elif ignored(here, rel, is_dir=False):
                continue
            elif not stat.S_ISREG(st.st_mode):
                skipped.append((rel, "not a regular file"))
            elif st.st_size > limits.max_file_bytes:
                skipped.append((rel, f"over {limits.max_file_bytes} bytes"))
            elif len(found) >= limits.max_files:
                skipped.append((rel, f"over {limits.max_files} files"))
            else:
                found[rel] = st
    return found, skipped


class Checkpointer:
    """Takes checkpoints of one workspace, storing only what changed since the last one."""

    def __init__(self, root: Path, blobs: Blobs, limits: Limits | None = None) -> None:
        self.root = root
        self.blobs = blobs
        self.limits = limits or Limits()
        self._seen: dict[str, Seen] = {}

    async def take(self) -> tuple[str, Manifest]:
        """Checkpoint the workspace now: the manifest's blob id and the manifest."""
        found, skipped = await asyncio.to_thread(scan, self.root, self.limits)
        manifest = Manifest(skipped=skipped)
        seen: dict[str, Seen] = {}
        for rel, st in found.items():
            old = self._seen.get(rel)
            if old is not None and (old.size, old.mtime_ns) == (st.st_size, st.st_mtime_ns):
                blob = old.blob  # unchanged since the last checkpoint: neither read nor stored
            else:
                try:
                    data = await asyncio.to_thread((self.root / rel).read_bytes)
                except OSError as exc:
                    manifest.skipped.append((rel, f"unreadable: {exc.strerror or exc}"))
                    continue
                blob = await self.blobs.put(data, FILE_MEDIA_TYPE)
            seen[rel] = Seen(st.st_size, st.st_mtime_ns, blob)
            manifest.files[rel] = FileEntry(blob, st.st_size, stat.S_IMODE(st.st_mode))
        self._seen = seen
        return await self.blobs.put(manifest.to_json(), MEDIA_TYPE), manifest


async def load_manifest(blobs: Blobs, manifest_id: str) -> Manifest:
    """The manifest stored under ``manifest_id`` (``CorruptLogError`` when it is missing)."""
    data = await blobs.get(manifest_id)
    if data is None:
        raise CorruptLogError(f"workspace checkpoint {manifest_id} is not in the store")
    return Manifest.from_json(data, f"workspace checkpoint {manifest_id}")

"""Restoring a workspace checkpoint: what would change (:func:`plan_restore`), then doing it.

The plan compares the workspace as a checkpoint would see it now (the same scan: ignored
and skipped files are never touched) with the manifest: files to write (missing, or other
bytes) and files to delete (present now, absent then). Writing is temp file + rename.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dsh.errors import CorruptLogError
from dsh.workspace.snapshot import Blobs, Limits, Manifest, blob_id, scan


@dataclass(slots=True)
class RestorePlan:
    """What restoring a manifest changes: paths to write and to delete (relative, sorted)."""

    write: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.write and not self.delete


def _plan(root: Path, manifest: Manifest, limits: Limits) -> RestorePlan:
    found, _ = scan(root, limits)
    plan = RestorePlan()
    for rel, entry in sorted(manifest.files.items()):
        st = found.get(rel)
        if st is None or st.st_size != entry.size or blob_id((root / rel).read_bytes()) != entry.blob:
            plan.write.append(rel)
    plan.delete = sorted(rel for rel in found if rel not in manifest.files)
    return plan


async def plan_restore(root: Path, manifest: Manifest, limits: Limits | None = None) -> RestorePlan:
    """What :func:`apply_restore` would change in ``root``."""
    return await asyncio.to_thread(_plan, root, manifest, limits or Limits())


def _write(root: Path, rel: str, data: bytes, mode: int) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".dsh-rewind-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


async def apply_restore(root: Path, manifest: Manifest, plan: RestorePlan, blobs: Blobs) -> None:
    """Make ``root``'s files those of ``manifest`` (as ``plan`` says)."""
    for rel in plan.write:
        entry = manifest.files[rel]
        data = await blobs.get(entry.blob)
        if data is None:
            raise CorruptLogError(
                f"workspace checkpoint: the content of {rel} ({entry.blob}) is not in the store"
            )
        await asyncio.to_thread(_write, root, rel, data, entry.mode)
    for rel in plan.delete:
        await asyncio.to_thread((root / rel).unlink, True)

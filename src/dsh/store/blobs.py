"""Attachment bytes as files: the JSONL store's ``<root>/attachments/<2 hex>/<64 hex>``.

One file per attachment id, holding its media type, a newline, then the raw bytes; written
through a private temp file, ``fsync`` and a rename (an existing object is kept: same id,
same bytes), so a crash never leaves a torn object under its final name.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from dsh.errors import CorruptLogError, StoreError

ATTACHMENTS_DIR = "attachments"


def blob_path(root: Path, attachment_id: str) -> Path:
    digest = attachment_id.removeprefix("sha256:")
    return root / ATTACHMENTS_DIR / digest[:2] / digest


def write_blob(root: Path, attachment_id: str, media_type: str, data: bytes) -> None:
    """Store the object once (blocking)."""
    target = blob_path(root, attachment_id)
    if target.is_file():
        return
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, media_type.encode("ascii") + b"\n" + data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise StoreError(f"cannot store attachment {attachment_id} in {root}: {exc.strerror or exc}") from exc


def read_blob(root: Path, attachment_id: str) -> tuple[str, bytes] | None:
    """The media type and bytes of a stored object (``None``: not stored)."""
    path = blob_path(root, attachment_id)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read attachment {path}: {exc.strerror or exc}") from exc
    media_type, newline, data = raw.partition(b"\n")
    if not newline:
        raise CorruptLogError(f"{path}: not an attachment object (no media type line)")
    return media_type.decode("ascii", errors="replace"), data

"""Reading the JSONL store's files: whole logs under a shared lock, and header lines.

- A reader takes ``flock(LOCK_SH)`` on a session file while it reads it. Writers append
  under ``LOCK_EX``, so a reader never sees a line that is only a write in progress; a
  torn tail it does see is one a dead writer left.
- A file's bytes are read back as plaintext lines by the root's encoding
  (:mod:`dsh.store.jsonl_encoding`: plain ``.jsonl`` or zstd frames ``.jsonl.zst``); the
  scan, the seal check and everything above them see the same lines in both.
- The directory index (``dsh.store.jsonl_index``) lists the directory with them.

Blocking functions: run them off the event loop. Warnings are returned, not reported
(a worker thread does not see the caller's warning sink).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dsh.errors import CorruptLogError, SessionNotFoundError, StoreError
from dsh.events import SessionHeader
from dsh.store.jsonl_encoding import FileEncoding
from dsh.store.jsonl_kept import FileKey, file_key
from dsh.store.logfile import Scan, decode_header_line, scan_log
from dsh.store.seal import Seal, check_sealed, read_seal

try:  # POSIX only
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - non-POSIX platforms
    _fcntl = None  # type: ignore[assignment]

_CHUNK: Final = 1 << 16
_MAX_HEADER: Final = 1 << 24
"""A first line longer than this is not a session header."""


def read_shared(path: Path, *, lock: bool = True) -> tuple[bytes, Seal | None]:
    """The whole file and its seal; with ``lock``, both read under ``LOCK_SH`` (after any write
    in progress, so the seal never describes bytes this read did not see)."""
    raw, seal, _ = read_keyed(path, lock=lock)
    return raw, seal


def read_keyed(path: Path, *, lock: bool = True) -> tuple[bytes, Seal | None, FileKey]:
    """:func:`read_shared`, and the key of the file as read (taken under the same lock)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if lock and _fcntl is not None:
            _fcntl.flock(fd, _fcntl.LOCK_SH)
        chunks: list[bytes] = []
        while chunk := os.read(fd, max(_CHUNK, os.fstat(fd).st_size)):
            chunks.append(chunk)
        st = os.fstat(fd)
        return b"".join(chunks), read_seal(path), file_key(st)
    finally:
        os.close(fd)  # closing drops the lock


def names_file(session_id: str, name: str, encoding: FileEncoding) -> bool:
    """Whether the session ``session_id`` lives in the file called ``name`` (an id no file can
    be named for, too long: no)."""
    try:
        return encoding.file_name(session_id) == name
    except StoreError:
        return False


def check_name(header: SessionHeader, path: Path, encoding: FileEncoding) -> None:
    """Refuse a file whose header names a session that does not live in this file."""
    if not names_file(header.id, path.name, encoding):
        raise CorruptLogError(f"{path}: its header names session {header.id[:80]!r}, not this file's")


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A session file read and decoded."""

    plain: bytes
    """Its plaintext lines (the file itself when plain)."""
    scan: Scan
    size: int
    """Its size on disk."""
    resume_at: int
    """File offset after its committed content: the next write starts here (``size`` unless torn)."""
    carry: bytes
    """Committed lines the next write must write again (a torn last zstd frame's; else empty)."""
    key: FileKey | None = None
    """The file's key when it was read (:func:`read_session`)."""

    @property
    def dropped(self) -> int:
        """Bytes of a torn tail (cut by the next append)."""
        return self.size - self.resume_at


def scan_file(
    raw: bytes,
    seal: Seal | None,
    path: Path,
    session_id: str | None,
    encoding: FileEncoding,
    key: FileKey | None = None,
) -> SessionFile:
    """Decode a store file's bytes (version 2 only), check that it holds ``session_id`` and
    compare it with its seal (a loss becomes ``scan.loss`` and a warning)."""
    unpacked = encoding.unpack(raw, path)
    scan = scan_log(unpacked.plain, str(path), legacy=False, trusted=True)
    scan.warnings[:0] = unpacked.warnings
    if session_id is not None and scan.header.id != session_id:
        raise CorruptLogError(f"{path}: its header names session {scan.header.id!r}, not this file's")
    check_name(scan.header, path, encoding)
    if seal is not None:
        scan.loss = check_sealed(
            str(path), unpacked.plain, len(scan.events), scan.header_end, scan.ends, seal
        )
        if scan.loss is not None:
            scan.warnings.append(scan.loss)
    resume_at, carry = unpacked.resume(scan.committed)
    return SessionFile(unpacked.plain, scan, len(raw), resume_at, carry, key)


def read_session(path: Path, session_id: str, encoding: FileEncoding, *, lock: bool = True) -> SessionFile:
    """Read and decode the file of ``session_id`` (``SessionNotFoundError`` when there is none)."""
    try:
        raw, seal, key = read_keyed(path, lock=lock)
    except FileNotFoundError:
        raise SessionNotFoundError(session_id, str(path.parent)) from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return scan_file(raw, seal, path, session_id, encoding, key)


def read_header(path: Path, encoding: FileEncoding) -> SessionHeader:
    """The session header on a store file's first line (zstd: its first frame), read without
    reading the rest."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        raw = head = b""
        while b"\n" not in head and len(raw) < _MAX_HEADER:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            raw += chunk
            head = encoding.head(raw, path)
    finally:
        os.close(fd)
    if not raw:
        raise CorruptLogError(f"{path}: empty file (no session header)")
    line, newline, _ = head.partition(b"\n")
    if not newline:
        raise CorruptLogError(f"{path}, line 1: the session header line is incomplete")
    _, _, header, _ = decode_header_line(line, str(path), legacy=False)
    check_name(header, path, encoding)
    return header

"""Reading the JSONL store's files: whole logs under a shared lock, header lines, and the directory index.

- A reader takes ``flock(LOCK_SH)`` on a session file while it reads it. Writers append
  under ``LOCK_EX``, so a reader never sees a line that is only a write in progress; a
  torn tail it does see is one a dead writer left.
- A file's bytes are read back as plaintext lines by the root's encoding
  (:mod:`dsh.store.jsonl_encoding`: plain ``.jsonl`` or zstd frames ``.jsonl.zst``); the
  scan, the seal check and everything above them see the same lines in both.
- :class:`JsonlIndex` lists the directory: the header line of every session file
  (cached by inode, size and mtime) decides whether a session is wanted, and only wanted
  files are read whole. A file that is not a readable session of this store (not a dsh
  header, another session's header, version 0, a newer version, unreadable) is skipped
  with a warning instead of failing the listing; a session file of the other encoding
  fails it (a root holds one encoding).

Blocking functions: run them off the event loop. Warnings are returned, not reported
(a worker thread does not see the caller's warning sink).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from dsh.errors import CorruptLogError, SessionNotFoundError, StoreError, UnsupportedFormatError
from dsh.events import SessionHeader
from dsh.store.base import SessionSummary
from dsh.store.jsonl_encoding import FileEncoding
from dsh.store.jsonl_tail import UNKNOWN, sealed_last_time
from dsh.store.logfile import Scan, decode_header_line, scan_log
from dsh.store.seal import Seal, check_sealed, read_seal

try:  # POSIX only
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - non-POSIX platforms
    _fcntl = None  # type: ignore[assignment]

_CHUNK: Final = 1 << 16
_MAX_HEADER: Final = 1 << 24
"""A first line longer than this is not a session header."""

T = TypeVar("T")
FileKey = tuple[int, int, int]
"""``(inode, size, mtime_ns)``: a file whose key is unchanged has unchanged contents."""


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
        return b"".join(chunks), read_seal(path), (st.st_ino, st.st_size, st.st_mtime_ns)
    finally:
        os.close(fd)  # closing drops the lock


def check_name(header: SessionHeader, path: Path, encoding: FileEncoding) -> None:
    """Refuse a file whose header names a session that does not live in this file."""
    if encoding.file_name(header.id) != path.name:
        raise CorruptLogError(f"{path}: its header names session {header.id!r}, not this file's")


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


@dataclass(frozen=True, slots=True)
class _Summary:
    summary: SessionSummary
    warnings: tuple[str, ...]


class JsonlIndex:
    """Summaries of the sessions in one JSONL directory, reading only the files a query needs."""

    def __init__(self, root: Path, encoding: FileEncoding) -> None:
        self.root = root
        self._encoding = encoding
        self._headers: dict[str, tuple[FileKey, SessionHeader]] = {}
        self._summaries: dict[str, tuple[FileKey, _Summary]] = {}

    def _header(self, path: Path, key: FileKey) -> SessionHeader:
        cached = self._headers.get(path.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        header = read_header(path, self._encoding)
        self._headers[path.name] = (key, header)
        return header

    def _summary(self, path: Path, key: FileKey) -> _Summary:
        cached = self._summaries.get(path.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        scan = scan_file(*read_shared(path), path, None, self._encoding).scan
        entry = _Summary(
            SessionSummary(
                scan.header,
                scan.inherited_event_count,
                len(scan.events),
                scan.events[-1].time if scan.events else None,
            ),
            tuple(scan.warnings),
        )
        self._summaries[path.name] = (key, entry)
        return entry

    def damaged(self, stem_prefix: str) -> str | None:
        """Why the first session file named ``stem_prefix...`` cannot be read (file and line), if any."""
        try:
            suffix = self._encoding.suffix
            names = sorted(
                n for n in os.listdir(self.root) if n.startswith(stem_prefix) and n.endswith(suffix)
            )
        except OSError:
            return None
        for name in names:
            path = self.root / name
            try:
                scan_file(*read_shared(path), path, None, self._encoding)
            except (CorruptLogError, UnsupportedFormatError) as exc:
                return str(exc)
            except OSError:
                continue
        return None

    def summaries(self, parent: str | None) -> tuple[list[SessionSummary], list[str]]:
        """Every session (``parent=None``) or the children of ``parent``, with the warnings met;
        a session file of the other encoding is refused (``UnsupportedFormatError`` naming it)."""

        def visit(path: Path, key: FileKey) -> SessionSummary | None:
            if parent is not None and self._header(path, key).parent_session != parent:
                return None
            found = self._summary(path, key)
            warnings.extend(found.warnings)
            return found.summary

        warnings: list[str] = []
        out = self._each(visit, warnings)
        out.sort(key=lambda s: (s.header.created_at, s.header.id))
        return out, warnings

    def latest(self, cwd: str) -> tuple[str | None, list[str]]:
        """``FindsLatest`` in this directory (``dsh.store.newest.latest_listed``'s rule), with the
        warnings met: each file's header and, for a plain file its seal vouches for, the time on
        its last line (``dsh.store.jsonl_tail``); any other file is read whole, as a listing does."""

        def visit(path: Path, key: FileKey) -> tuple[int, int, str] | None:
            header = self._header(path, key)
            if header.is_subagent or header.cwd != cwd:
                return None
            last = sealed_last_time(path, key[1]) if not self._encoding.zstd else UNKNOWN
            if last == UNKNOWN:
                found = self._summary(path, key)
                warnings.extend(found.warnings)
                last = found.summary.last_time if found.summary.event_count else None
            return (header.created_at if last is None else last, header.created_at, header.id)

        warnings: list[str] = []
        ranked = self._each(visit, warnings)
        return (max(ranked)[2] if ranked else None), warnings

    def _each(self, visit: Callable[[Path, FileKey], T | None], warnings: list[str]) -> list[T]:
        """What ``visit`` gives for each session file (``None``s left out); a file that cannot be
        read is skipped with a warning, one of the other encoding refused (``UnsupportedFormatError``)."""
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot list {self.root}: {exc.strerror or exc}") from exc
        out: list[T] = []
        encoding = self._encoding
        for entry in entries:
            if encoding.is_other(entry.name):
                raise encoding.mismatch(Path(entry.path))
            if not entry.name.endswith(encoding.suffix) or entry.name.startswith("."):
                continue
            path = Path(entry.path)
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
                found = visit(path, (st.st_ino, st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                continue  # removed while we listed
            except (CorruptLogError, UnsupportedFormatError) as exc:
                warnings.append(f"skipped a file that is not a readable session here: {exc}")
                continue
            except OSError as exc:
                warnings.append(f"skipped {path}: cannot read it: {exc.strerror or exc}")
                continue
            if found is not None:
                out.append(found)
        return out

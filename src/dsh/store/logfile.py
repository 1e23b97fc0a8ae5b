"""Log files: version dispatch, the torn-tail rule, zstd frames, and reading/writing whole logs.

A log file is a header line then one record per line (``.jsonl``), optionally compressed
as a sequence of Zstandard frames (``.jsonl.zst``; detected by the frame magic, not the
name). The header's ``version`` is checked before anything else: 2 is read by the
version-2 codec, 0 by the legacy reader, anything else is refused with
:class:`~dsh.errors.UnsupportedFormatError`.

Torn tail: only the last line may be incomplete (no trailing newline: a write cut short); it
is dropped with a warning. Every complete line (one ending in a newline) that is not valid
JSON or not a valid event, the last one included, is committed corruption and raises
:class:`~dsh.errors.CorruptLogError` naming the file and line.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from dsh.errors import (
    CorruptLogError,
    DshError,
    InvalidEventError,
    StoreError,
    UnsupportedFormatError,
    install_hint,
)
from dsh.events import FORMAT_VERSION, LEGACY_VERSION, Event, SessionHeader, check_contiguous, check_cut
from dsh.events import decode_cut as _decode_cut
from dsh.ids import is_template_id, new_session_id
from dsh.store.base import LoadedSession
from dsh.store.bulk import paused_gc
from dsh.store.codec import decode_event_v2, decode_header_v2, encode_event_lines, encode_log_bytes
from dsh.store.extras import check_header_extra, encode_header_with_extra, header_extra
from dsh.store.legacy import decode_header_v0, decode_row_v0, import_events, import_problem
from dsh.store.rules import check_header_ids

try:  # optional dependency: the ``zstd`` extra (``dsh.errors.install_hint``)
    import zstandard as _zstd
except ImportError:  # pragma: no cover - exercised only where zstandard is absent
    _zstd = None  # type: ignore[assignment]

ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
"""The first four bytes of a Zstandard frame."""
_FIRST_PIECE: Final = 4096

READABLE_VERSIONS: Final = (FORMAT_VERSION, LEGACY_VERSION)


@dataclass(slots=True)
class Scan:
    """The result of scanning one log's bytes (internal to the codecs and the JSONL store)."""

    raw_header: dict[str, Any]
    version: int
    header: SessionHeader
    events: list[Event]
    inherited_event_count: int
    seed_length: int | None
    header_end: int
    """Byte offset just after the header line."""
    ends: list[int]
    """``ends[i]``: byte offset just after the line holding event ``i``."""
    committed: int
    """Byte offset just after the last committed (complete, valid) line; bytes after it are a torn tail."""
    warnings: list[str] = field(default_factory=list)
    loss: str | None = None
    """JSONL store files: the line naming the events the seal says are missing (``dsh.store.seal``)."""


def check_version(raw: object, source: str) -> int:
    """Return the header's ``version`` if dsh reads it; refuse anything else."""
    if not isinstance(raw, dict):
        raise CorruptLogError(f"{source}, line 1: the first line is not a session header object")
    version = raw.get("version")
    if type(version) is int and version in READABLE_VERSIONS:
        return version
    if type(version) is int and version > FORMAT_VERSION:
        raise UnsupportedFormatError(
            f"{source}: log format version {version} is newer than this dsh reads "
            f"({FORMAT_VERSION}) — upgrade dsh"
        )
    raise UnsupportedFormatError(
        f"{source}: unknown format version {version!r} (this dsh reads versions 2 and 0)"
    )


@dataclass(frozen=True, slots=True)
class Frames:
    """A zstd log's frames read back: the one home of the zstd torn-tail rule (an incomplete
    last frame is a write cut short; a frame that does not decode is corruption)."""

    plain: bytes
    """Every complete frame's content, then what an incomplete last frame yields."""
    complete_end: int
    """Byte offset just after the last complete frame (where a torn last frame starts)."""
    complete_plain: int
    """Plaintext length of the complete frames (``plain[complete_plain:]`` is the torn frame's)."""
    warnings: list[str]


def split_frames(data: bytes, source: str, *, limit: int | None = None) -> Frames:
    """Walk a sequence of zstd frames (each checked against its content checksum); ``limit``:
    stop after that many complete frames (the rest is neither read nor reported).

    Each frame is fed from its start in doubling pieces (4 KiB first), so a frame's decoder
    copies at most one piece past its end: the walk is linear in the file, not quadratic
    (a W1 log holds thousands of small frames)."""
    if _zstd is None:
        raise UnsupportedFormatError(
            f"{source} is zstd-compressed; install the zstd extra: {install_hint('zstd')}"
        )
    dctx = _zstd.ZstdDecompressor()
    view = memoryview(data)
    out: list[bytes] = []
    warnings: list[str] = []
    start = complete_plain = frames = 0  # start: where the frame being read begins
    while start < len(data):
        dobj = dctx.decompressobj()
        fed, step, parts = start, _FIRST_PIECE, []
        try:
            while not dobj.eof and fed < len(data):
                piece = view[fed : fed + step]
                parts.append(dobj.decompress(piece))
                fed += len(piece)
                step *= 2
        except _zstd.ZstdError as exc:
            raise CorruptLogError(f"{source}: corrupt zstd frame at byte {start}: {exc}") from exc
        content = b"".join(parts)
        out.append(content)
        if not dobj.eof:
            warnings.append(
                f"{source}: the last zstd frame is incomplete ({len(data) - start} bytes at byte "
                f"{start}: a write was cut short)"
            )
            break
        start = fed - len(dobj.unused_data)
        complete_plain += len(content)
        frames += 1
        if limit is not None and frames >= limit:
            break
    return Frames(b"".join(out), start, complete_plain, warnings)


def decompress(data: bytes, source: str) -> tuple[bytes, list[str]]:
    """Plaintext of a zstd log (a sequence of frames); an incomplete last frame is a torn tail."""
    frames = split_frames(data, source)
    return frames.plain, frames.warnings


def compress(data: bytes) -> bytes:
    """One checksummed zstd frame holding ``data``."""
    if _zstd is None:
        raise UnsupportedFormatError(f"writing .zst logs needs the zstd extra: {install_hint('zstd')}")
    return bytes(_zstd.ZstdCompressor(write_checksum=True).compress(data))


def decode_header_line(
    line: bytes, source: str, *, legacy: bool = True
) -> tuple[dict[str, Any], int, SessionHeader, int | None]:
    """``(raw header, version, header, seedLength)`` of a log's first line (without its newline).

    ``legacy=False`` refuses version 0 (a JSONL store file must be version 2).
    """
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise CorruptLogError(f"{source}, line 1: the session header is not valid JSON") from exc
    version = check_version(raw, source)
    if version == LEGACY_VERSION and not legacy:
        raise UnsupportedFormatError(
            f"{source}: a version-0 log cannot be used as a store file; import it (dsh sessions import)"
        )
    seed_length: int | None = None
    try:
        if version == FORMAT_VERSION:
            header = decode_header_v2(raw, f"{source}, line 1")
        else:
            header, seed_length = decode_header_v0(raw, f"{source}, line 1")
    except InvalidEventError as exc:
        raise CorruptLogError(str(exc)) from exc
    return raw, version, header, seed_length


def scan_log(data: bytes, source: str, *, legacy: bool = True, trusted: bool = False) -> Scan:
    """Decode a whole log's plaintext bytes (``legacy=False`` refuses version 0; ``trusted``:
    a store's own file, whose payload shapes were checked on append or import, so only the
    envelopes are checked again)."""
    with paused_gc():
        return _scan(data, source, legacy, not trusted)


def _scan(data: bytes, source: str, legacy: bool, shapes: bool) -> Scan:
    if not data:
        raise CorruptLogError(f"{source}: empty file (no session header)")
    lines = data.split(b"\n")
    tail = lines.pop()
    if not lines:
        raise CorruptLogError(f"{source}, line 1: the session header line is incomplete")
    raw, version, header, seed_length = decode_header_line(lines[0], source, legacy=legacy)
    warnings: list[str] = []
    torn: tuple[int, str] | None = None
    events: list[Event] = []
    ends: list[int] = []
    pos = len(lines[0]) + 1
    header_end = pos
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    v2 = version == FORMAT_VERSION
    for n in range(1, len(lines)):
        line = lines[n]
        try:
            obj = loads(line)
        except decode_error as exc:  # a complete line (it has its newline): corruption, never a torn write
            raise CorruptLogError(f"{source}, line {n + 1}: not valid JSON") from exc
        try:
            if v2:
                event = decode_event_v2(obj, "event", shapes=shapes)
                if event.seq != len(events):
                    raise InvalidEventError(f"expected seq {len(events)}, found {event.seq}")
                events.append(event)
            else:
                decoded = decode_row_v0(obj, "record")
                if decoded[0].seq != len(events):
                    raise InvalidEventError(f"expected seq {len(events)}, found {decoded[0].seq}")
                events.extend(decoded)
        except InvalidEventError as exc:
            raise CorruptLogError(f"{source}, line {n + 1}: {exc}") from exc
        except UnsupportedFormatError as exc:
            raise UnsupportedFormatError(f"{source}, line {n + 1}: {exc}") from exc
        pos += len(line) + 1
        if v2:  # one event a line
            ends.append(pos)
        else:  # a packed version-0 row: every event it holds ends here
            ends.extend([pos] * (len(events) - len(ends)))
    if tail:
        torn = (len(lines) + 1, "no newline")
    if torn is not None:
        warnings.append(
            f"{source}: dropped the incomplete last line {torn[0]} ({torn[1]}, {len(data) - pos} bytes)"
        )
    if v2:
        try:
            cut = _decode_cut(header.is_seeded, events, source)
        except InvalidEventError as exc:
            raise CorruptLogError(str(exc)) from exc
    else:
        if seed_length is not None and seed_length > len(events):
            raise CorruptLogError(f"{source}: seedLength {seed_length} exceeds the {len(events)} events")
        cut = seed_length or 0
    return Scan(raw, version, header, events, cut, seed_length, header_end, ends, pos, warnings)


@dataclass(frozen=True, slots=True)
class DecodedLog:
    """A whole log file read back, as recorded (version 0 or 2)."""

    source: str
    version: int
    raw_header: dict[str, Any]
    header: SessionHeader
    inherited_event_count: int
    events: list[Event]
    """Every event, packed rows expanded, exactly as recorded (no rewrite)."""
    warnings: tuple[str, ...] = ()
    seed_length: int | None = None
    """Version 0 only: the header's ``seedLength`` (``None`` when absent)."""

    @property
    def import_problem(self) -> str | None:
        """Why this log cannot be imported, or ``None`` (only version-0 logs can fail)."""
        if self.version != LEGACY_VERSION:
            return None
        return import_problem(self.events, self.seed_length)

    def as_loaded(self) -> LoadedSession:
        """The log as read (for inspection and replay): header, cut and events verbatim."""
        return LoadedSession(
            self.header,
            self.inherited_event_count,
            self.events,
            self.warnings,
            header_extra=header_extra(self.raw_header),
        )

    def for_import(self) -> LoadedSession:
        """The log as a version-2 store holds it; raises with the reason if it cannot be imported.

        Version 0: the ``session/end-seed`` at seq ``seedLength`` is tagged
        ``"inherited": true``; nothing else changes (seqs, types and data are kept). A
        malformed id or parent id, or a session naming itself as its parent, is refused. An
        id that is a template token (the original's snapshot logs say ``{{sessionId}}``)
        names no session: the session gets a fresh id.
        """
        try:
            check_header_ids(self.header)
        except DshError as exc:
            raise CorruptLogError(f"{self.source}: {exc}") from exc
        header = self.header
        if is_template_id(header.id):
            header = header.evolve(id=new_session_id())
        events = self.events
        if self.version == LEGACY_VERSION:
            events = import_events(self.events, self.seed_length, self.source)
        return LoadedSession(
            header,
            self.inherited_event_count,
            events,
            self.warnings,
            header_extra=header_extra(self.raw_header),
        )


def decode_log(data: bytes, source: str) -> DecodedLog:
    """Decode a whole log (plain or zstd bytes); ``source`` names it in errors."""
    warnings: list[str] = []
    if data.startswith(ZSTD_MAGIC):
        data, warnings = decompress(data, source)
    scan = scan_log(data, source)
    return DecodedLog(
        source=source,
        version=scan.version,
        raw_header=scan.raw_header,
        header=scan.header,
        inherited_event_count=scan.inherited_event_count,
        events=scan.events,
        warnings=(*warnings, *scan.warnings),
        seed_length=scan.seed_length,
    )


def encode_log(session: LoadedSession) -> bytes:
    """A self-contained version-2 JSONL log of ``session`` (header line, then its events)."""
    where = f"session {session.header.id}"
    check_contiguous(session.events, where)
    check_cut(session.header, session.inherited_event_count, session.events)
    if session.header_extra:
        check_header_extra(session.header_extra, session.header.id)
        head = encode_header_with_extra(session.header, session.header_extra)
        return head + encode_event_lines(session.events)
    return encode_log_bytes(session.header, session.events)


def read_bytes(path: Path) -> bytes:
    """Read a whole file, mapping OS errors to one-line :class:`StoreError` naming it."""
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise StoreError(f"log file {path} does not exist") from exc
    except OSError as exc:
        raise StoreError(f"cannot read log file {path}: {exc.strerror or exc}") from exc


def load_log_file(path: str | os.PathLike[str]) -> DecodedLog:
    """Blocking read and decode of one log file (see :func:`read_log_file`)."""
    p = Path(path)
    return decode_log(read_bytes(p), str(p))


async def read_log_file(path: str | os.PathLike[str]) -> DecodedLog:
    """Read and decode one log file (version 2 or 0, plain or zstd) off the event loop."""
    return await asyncio.to_thread(load_log_file, path)


def fsync_dir(path: Path) -> None:
    """Make a directory entry change durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


FILE_MODE: Final = 0o666
"""The mode dsh creates files with, less the process umask (0644 under umask 022) as every
tool's files: recordings, exports, session files. Never ``mkstemp``'s 0600 by accident."""
PRIVATE_MODE: Final = 0o600
"""The mode of a file that must stay the user's alone whatever the umask (say so at the call)."""
_NEW: Final = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def create_temp(path: Path, *, private: bool = False, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new temp file beside ``path`` (``.NAME.RANDOM.tmp``), open read-write: the one place
    dsh picks a new file's mode — :data:`FILE_MODE` (the umask applies), ``private``:
    :data:`PRIVATE_MODE`. Raises ``OSError``."""
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(tmp, _NEW, PRIVATE_MODE if private else FILE_MODE), tmp
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue


def write_file_atomic(path: Path, data: bytes, *, private: bool = False) -> None:
    """Write ``data`` to ``path`` through a fsynced temp file and a rename (blocking); the
    file is created :data:`FILE_MODE` less the umask, ``private``: :data:`PRIVATE_MODE`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = create_temp(path, private=private)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        fsync_dir(path.parent)
    except OSError as exc:
        raise StoreError(f"cannot write log file {path}: {exc.strerror or exc}") from exc


async def write_log_file(path: str | os.PathLike[str], session: LoadedSession) -> None:
    """Write ``session`` as a version-2 log (zstd-compressed when the name ends in ``.zst``).

    The file is written to a temp file, fsynced and renamed into place.
    """
    p = Path(path)
    data = encode_log(session)
    if p.name.endswith(".zst"):
        data = compress(data)
    await asyncio.to_thread(write_file_atomic, p, data)

"""``JsonlEventStore``: one append-only version-2 JSONL file per session under a root directory.

- ``<root>/<session-id>.jsonl``: the header line, then one event per line. Ids with
  characters outside ``[A-Za-z0-9._-]`` (or a leading ``.``) are escaped as ``~XX`` per
  UTF-8 byte, so every id maps to one plain file name.
- ``compression="zstd"`` (``jsonl+zstd:DIR``): ``<root>/<session-id>.jsonl.zst``, the same
  lines as zstd frames, one per write (:mod:`dsh.store.jsonl_encoding`); the writer keeps
  file offsets (frame ends) and plaintext offsets (the seal's) apart.
- Creation writes the header and seed to a temp file, fsyncs it and links it into place
  (never overwriting), so a half-created session never appears.
- Appends only ever add bytes at the end. ``durable=False`` appends are buffered in the
  store and written at the next durable append, read or ``close()``; a durable append
  returns after ``fsync``. One open append handle is kept per session.
- Loading never rewrites a file. A torn last line is dropped with a warning (reported on
  every read that meets it); the next append first truncates the file back to its last
  committed byte (and reports that), so a garbage line never ends up in the middle of a log.
- Writers append under ``flock(LOCK_EX)``, readers read under ``LOCK_SH``
  (:mod:`dsh.store.jsonl_files`), so a write in progress is never taken for a torn tail.
- ``create_batch`` stages every file and commits at the end (:mod:`dsh.store.staging`);
  the first operation of a handle cleans up after writers that died.
- ``delete`` removes the session's and its descendants' files through a journal
  (:mod:`dsh.store.staging`): all of them, or — after a crash — finished by the next open.
- Session leases: ``flock`` on ``<root>/.<id>.jsonl.lock`` (:mod:`dsh.store.lease`).
- The seal ``<root>/.<id>.jsonl.seal`` (:mod:`dsh.store.seal`) records each durable
  append; a file cut short of it is reported on every read and refused for appending.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from dsh.errors import (
    SeqConflictError,
    SessionExistsError,
    SessionNotFoundError,
    SessionTruncatedError,
    StoreClosedError,
    StoreError,
)
from dsh.events import Event, SessionHeader
from dsh.events.fork import ForkOptions, fork_seed
from dsh.store import jsonl_spool
from dsh.store.base import LoadedSession, SessionSummary
from dsh.store.blobs import read_blob, write_blob
from dsh.store.codec import encode_event_checked, encode_event_lines, encode_header_line
from dsh.store.extras import encode_header_with_extra, header_extra
from dsh.store.front import StoreFront
from dsh.store.jsonl_encoding import PLAIN, encoding_for
from dsh.store.jsonl_files import SessionFile, read_header, read_session
from dsh.store.jsonl_index import JsonlIndex
from dsh.store.jsonl_kept import FileKey, file_key
from dsh.store.lease import FileLeases, LeaseTable, session_file_stem
from dsh.store.notices import report_all
from dsh.store.rules import check_append
from dsh.store.seal import Seal, line_digest, open_seal, remove_seal, write_new_seal, write_slot
from dsh.store.spool import SpoolBatch, Spooled
from dsh.store.staging import delete_files, publish_batch, publish_file, recover
from dsh.store.threads import run_blocking

try:  # advisory locks keep two processes from interleaving appends (POSIX only)
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - non-POSIX platforms
    _fcntl = None  # type: ignore[assignment]

LEASE_SUFFIX: Final = ".lock"
"""A session's lease file is ``<root>/.<id file name>.lock`` (hidden, so never listed)."""


def session_file_name(session_id: str) -> str:
    """The plain store's file name holding ``session_id`` (an injective, filesystem-safe mapping)."""
    return PLAIN.file_name(session_id)


@dataclass(slots=True, eq=False)
class _Writer:
    """The append state of one session file (touched only while ``lock`` is held)."""

    session_id: str
    path: Path
    fd: int
    next_seq: int
    committed: int
    """File offset after the last committed line (zstd: frame): where the next write starts."""
    seen: int
    """File size when this store last looked (differs from ``committed`` after a torn tail)."""
    plain_end: int
    """Plaintext offset after the last committed line (the seal's ``end``; plain: ``committed``)."""
    carry: bytes
    """Committed lines of a torn last zstd frame, written again by the next write (plain: empty)."""
    seal_fd: int
    """The session's seal (``dsh.store.seal``), rewritten after every durable append."""
    last_digest: str
    """Digest of the file's last committed line (what the next seal names)."""
    pending: list[bytes] = field(default_factory=list)
    pending_events: int = 0
    slot: int = 0
    unsynced: bool = False
    notices: list[str] = field(default_factory=list)
    """Warnings of the last write (reported by the event-loop side)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def _last_digest(file: SessionFile) -> str:
    """Digest of the last committed line of a scanned file (the header when it has no event)."""
    scan = file.scan
    end = scan.ends[-1] if scan.ends else scan.header_end
    start = (scan.ends[-2] if len(scan.ends) > 1 else scan.header_end) if scan.ends else 0
    return line_digest(file.plain[start : end - 1])


@dataclass(frozen=True, slots=True)
class _Start:
    """Where a writer starts in a file as read (the :class:`_Writer` fields of the same names)."""

    next_seq: int
    committed: int
    seen: int
    plain_end: int
    carry: bytes
    last_digest: str


def _start_of(file: SessionFile) -> _Start:
    """Where a writer starts after ``file`` (refusing a file that lost sealed lines)."""
    scan = file.scan
    if scan.loss is not None:
        raise SessionTruncatedError(f"refusing to append to session {scan.header.id}: {scan.loss}")
    return _Start(len(scan.events), file.resume_at, file.size, scan.committed, file.carry, _last_digest(file))


_STARTS_KEPT: Final = 256
"""Files whose last whole read a store keeps the writer's start of (a long-lived process reads
many sessions; a writer is opened right after its session's load)."""


def _seal_of(head: bytes, body: bytes, count: int) -> Seal:
    """The seal of a new file holding the header line ``head`` then ``body`` (``count`` events),
    without joining them (a fork's body is the parent's whole prefix)."""
    last = body or head
    line_start = last.rfind(b"\n", 0, len(last) - 1) + 1
    return Seal(count, len(head) + len(body), line_digest(last[line_start:-1]))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class JsonlEventStore(StoreFront):
    """An ``EventStore`` of version-2 JSONL files (``jsonl:DIR``; ``compression="zstd"``:
    ``jsonl+zstd:DIR``, zstd frames in ``.jsonl.zst`` files)."""

    def __init__(self, root: str | os.PathLike[str], *, compression: str = "none") -> None:
        self.root = Path(root)
        self.encoding = encoding_for(compression)
        self._writers: dict[str, _Writer] = {}
        self._starts: dict[str, tuple[FileKey, _Start]] = {}
        """Where a writer would start in each file as last read whole, by the file's key then:
        the writer opened after a load starts there when the file is unchanged."""
        self._starts_lock = threading.Lock()
        self._open_lock = asyncio.Lock()
        self._closed = False
        self._index = JsonlIndex(self.root, self.encoding)
        lease_suffix = self.encoding.suffix + LEASE_SUFFIX
        self._leases = LeaseTable(FileLeases(self.root, prefix=".", suffix=lease_suffix))
        self._recovered = False

    # -- paths and scanning (blocking helpers, run off the loop) ------------------------

    def local_files(self) -> tuple[Path, ...]:
        """``HasLocalFiles``: the store's directory (every session file, seal, lock, attachment)."""
        return (self.root,)

    def path_for(self, session_id: str) -> Path:
        """The file that holds (or would hold) ``session_id``."""
        return self.root / self.encoding.file_name(session_id)

    def _stored_path(self, session_id: str) -> Path:
        """The file of a session to read: an id no file name can hold is a session not stored."""
        try:
            return self.path_for(session_id)
        except StoreError:
            raise SessionNotFoundError(session_id, str(self.root)) from None

    def _check_encoding(self, session_id: str) -> None:
        """Refuse a session whose file is of the other encoding (a root holds one)."""
        other = self.root / self.encoding.other.file_name(session_id)
        if other.is_file():
            raise self.encoding.mismatch(other)

    def _read(self, session_id: str, *, lock: bool = True) -> SessionFile:
        """Read and decode a session file (under ``LOCK_SH`` unless the caller holds ``LOCK_EX``)."""
        path = self._stored_path(session_id)
        try:
            file = read_session(path, session_id, self.encoding, lock=lock)
        except SessionNotFoundError:
            self._check_encoding(session_id)
            raise
        if file.key is not None and file.scan.loss is None:
            start = _start_of(file)
            with self._starts_lock:  # reads run on worker threads
                self._starts.pop(session_id, None)
                self._starts[session_id] = (file.key, start)
                if len(self._starts) > _STARTS_KEPT:  # the oldest read goes first
                    del self._starts[next(iter(self._starts))]
        return file

    def _start(self, session_id: str, fd: int) -> _Start:
        """Where a writer of the file open as ``fd`` starts: from the last whole read of it
        when the file is unchanged since (same key), else from reading it again."""
        with self._starts_lock:
            kept = self._starts.pop(session_id, None)
        st = os.fstat(fd)
        if kept is not None and kept[0] == file_key(st):
            return kept[1]
        return _start_of(self._read(session_id))

    def _open_writer(self, session_id: str) -> _Writer:
        path = self._stored_path(session_id)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            self._check_encoding(session_id)
            raise SessionNotFoundError(session_id, str(self.root)) from None
        except OSError as exc:
            raise StoreError(f"cannot open {path} for appending: {exc.strerror or exc}") from exc
        try:
            start = self._start(session_id, fd)
            seal_fd = open_seal(path)
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"cannot open the seal of {path}: {exc.strerror or exc}") from exc
        except BaseException:
            os.close(fd)
            raise
        w = _Writer(
            session_id,
            path,
            fd,
            start.next_seq,
            start.committed,
            start.seen,
            start.plain_end,
            start.carry,
            seal_fd,
            start.last_digest,
        )
        # Registered here, not by the awaiting coroutine: if that is cancelled, the open
        # handle is still kept (and closed by close()) instead of leaking.
        self._writers[session_id] = w
        return w

    def _write(self, w: _Writer, data: bytes, count: int, first: int, fsync: bool) -> None:
        """Write one batch at the end of ``w``'s file (blocking; caller holds ``w.lock``)."""
        fd = w.fd
        if _fcntl is not None:
            _fcntl.flock(fd, _fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            if size != w.seen:  # another writer appended, or a failed write left bytes (or a cut)
                start = _start_of(self._read(w.session_id, lock=False))  # we hold LOCK_EX
                w.next_seq, w.committed, w.seen = start.next_seq, start.committed, start.seen
                w.plain_end, w.carry, w.last_digest = start.plain_end, start.carry, start.last_digest
            if count and first != w.next_seq:
                raise SeqConflictError(w.session_id, w.next_seq, first)
            if w.committed != w.seen:  # drop a torn tail before adding lines after it
                os.ftruncate(fd, w.committed)
                again = f" (its {len(w.carry)} bytes of whole lines are written again)" if w.carry else ""
                w.notices.append(
                    f"{w.path}: truncated a torn tail of {w.seen - w.committed} bytes before appending{again}"
                )
                w.seen = w.committed
            packed = self.encoding.pack(w.carry + data)
            try:
                if packed:
                    _write_all(fd, packed)
                if fsync:
                    os.fsync(fd)
            except OSError:
                try:
                    os.ftruncate(fd, w.committed)
                    w.seen = w.committed
                except OSError:
                    w.seen = -1  # unknown: rescan before the next write
                raise
            w.committed += len(packed)
            w.seen = w.committed
            w.plain_end += len(data)
            w.carry = b""
            w.next_seq += count
            w.unsynced = not fsync
            if data:
                w.last_digest = line_digest(data[:-1].rsplit(b"\n", 1)[-1])
            if fsync:
                self._seal(w)
        except OSError as exc:
            raise StoreError(f"cannot append to {w.path}: {exc.strerror or exc}") from exc
        finally:
            if _fcntl is not None:
                _fcntl.flock(fd, _fcntl.LOCK_UN)

    def _seal(self, w: _Writer) -> None:
        """Record the durable state of ``w``'s file in its seal (after the file's fsync)."""
        try:
            write_slot(w.seal_fd, Seal(w.next_seq, w.plain_end, w.last_digest), w.slot)
            w.slot ^= 1
        except OSError as exc:  # the append is durable; only the check of its loss is not
            w.notices.append(f"{w.path}: cannot update its seal: {exc.strerror or exc}")

    def _exists_error(self, session_id: str) -> SessionExistsError:
        return SessionExistsError(session_id, str(self.root))

    def _publish(self, session_id: str, head: bytes, body: bytes, count: int) -> None:
        """Atomically create a session file holding the header line ``head`` then ``body``
        (``count`` events) and its seal; never overwrite one."""
        path = self.path_for(session_id)
        self._check_encoding(session_id)
        try:
            publish_file(self.root, session_id, path, self.encoding.pack_new(head, body), self._exists_error)
            write_new_seal(path, _seal_of(head, body, count))
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror or exc}") from exc

    def _publish_batch(self, items: list[tuple[str, bytes, bytes, int]]) -> None:
        """Create every session file, or none (staged, then linked; see :mod:`dsh.store.staging`)."""
        for sid, _, _, _ in items:
            self._check_encoding(sid)
        pack = self.encoding.pack_new
        staged = [(sid, self.path_for(sid), pack(head, body)) for sid, head, body, _ in items]
        try:
            publish_batch(self.root, staged, self._exists_error)
            for (_, path, _), (_, head, body, count) in zip(staged, items, strict=True):
                write_new_seal(path, _seal_of(head, body, count))
        except OSError as exc:
            raise StoreError(f"cannot import into {self.root}: {exc.strerror or exc}") from exc

    def _recover_sync(self) -> list[str]:
        """Clean up after dead writers, and refuse a root holding the other encoding's files."""
        try:
            return recover(self.root, check=self._refuse_other)
        except OSError as exc:
            raise StoreError(f"cannot clean up {self.root}: {exc.strerror or exc}") from exc

    def _refuse_other(self, entry: os.DirEntry[str]) -> None:
        if self.encoding.is_other(entry.name):
            raise self.encoding.mismatch(Path(entry.path))

    def _fork_sync(self, parent_id: str, options: ForkOptions) -> tuple[SessionSummary, list[str]]:
        file = self._read(parent_id)
        scan = file.scan
        child = fork_seed(scan.header, scan.events, options)
        n = child.cut
        body = b""
        if n:  # the parent's prefix lines as they are, then the marker
            marker = encode_event_checked(child.seed[n]) + b"\n"
            body = file.plain[scan.header_end : scan.ends[n - 1]] + marker
        self._publish(child.header.id, encode_header_line(child.header), body, len(child.seed))
        return SessionSummary(child.header, n, len(child.seed)), scan.warnings

    # -- the EventStore protocol ---------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"the JSONL store at {self.root} is closed")

    async def _ready(self) -> None:
        """Refuse use after close; on first use, clean up after writers that died (once per handle)."""
        self._check_open()
        if not self._recovered:
            async with self._open_lock:
                if not self._recovered:
                    report_all(await run_blocking(None, self._recover_sync))
                    self._recovered = True

    async def _writer(self, session_id: str) -> _Writer:
        w = self._writers.get(session_id)
        if w is not None:
            return w
        async with self._open_lock:
            w = self._writers.get(session_id)
            if w is None:
                w = await run_blocking(None, self._open_writer, session_id)
            return w

    async def _flush(self, w: _Writer, *, durable: bool) -> None:
        """Write ``w``'s buffered lines (and fsync when ``durable``); caller holds ``w.lock``."""
        if not w.pending and not (durable and w.unsynced):
            return
        data = b"".join(w.pending)
        count = w.pending_events
        first = w.next_seq
        w.pending = []
        w.pending_events = 0
        try:
            await run_blocking(None, self._write, w, data, count, first, durable)
        finally:
            notices, w.notices = w.notices, []
            report_all(notices)

    async def _flush_session(self, session_id: str) -> None:
        """Write buffered lines and wait for an in-flight write, so a read sees whole lines."""
        w = self._writers.get(session_id)
        if w is not None:
            async with w.lock:
                await self._flush(w, durable=False)

    async def _flush_all(self) -> None:
        for session_id in list(self._writers):
            await self._flush_session(session_id)

    @property
    def where(self) -> str:
        """The root directory."""
        return str(self.root)

    async def _enter(self) -> None:
        await self._ready()

    async def _settle(self, session_id: str | None) -> None:
        if session_id is None:
            await self._flush_all()
        else:
            await self._flush_session(session_id)

    async def _store_one(self, header: SessionHeader, seed: Sequence[Event], cut: int) -> None:
        head, body = encode_header_line(header), encode_event_lines(seed)
        await run_blocking(None, self._publish, header.id, head, body, len(seed))

    async def _store_many(self, sessions: Sequence[LoadedSession], extras: Sequence[bytes | None]) -> None:
        """Create every session file, or none: staged, linked into place, committed at the end."""
        items = [
            (
                s.header.id,
                encode_header_with_extra(s.header, s.header_extra),
                encode_event_lines(s.events),
                len(s.events),
            )
            for s in sessions
        ]
        await run_blocking(None, self._publish_batch, items)

    async def append(self, session_id: str, events: Sequence[Event], *, durable: bool = True) -> None:
        await self._ready()
        w = await self._writer(session_id)
        async with w.lock:
            self._check_open()
            check_append(session_id, events, w.next_seq + w.pending_events)
            if events:
                w.pending.append(encode_event_lines(events))
                w.pending_events += len(events)
            if durable:
                await self._flush(w, durable=True)

    async def _load_session(self, session_id: str, streams: bool = True) -> LoadedSession:
        file = await run_blocking(None, self._read, session_id)
        scan = file.scan
        report_all(scan.warnings)
        return LoadedSession(
            scan.header,
            scan.inherited_event_count,
            scan.events,
            tuple(scan.warnings),
            dropped_bytes=file.dropped,
            header_extra=header_extra(scan.raw_header),
            loss=scan.loss,
        )

    async def _read_events(self, session_id: str, seq: int) -> list[Event]:
        loaded = await self._load_session(session_id)
        return list(loaded.events[seq:])

    async def _read_header(self, session_id: str) -> SessionHeader:
        path = self._stored_path(session_id)
        try:
            return await run_blocking(None, read_header, path, self.encoding)
        except FileNotFoundError:
            await run_blocking(None, self._check_encoding, session_id)
            raise SessionNotFoundError(session_id, str(self.root)) from None

    async def _exists_session(self, session_id: str) -> bool:
        try:
            path = self.path_for(session_id)
        except StoreError:
            return False
        return await run_blocking(None, self._is_stored, path, session_id)

    def _is_stored(self, path: Path, session_id: str) -> bool:
        if path.is_file():
            return True
        self._check_encoding(session_id)
        return False

    async def damaged_log(self, id_prefix: str) -> str | None:
        """``ReportsDamage``: the first unreadable session file whose name starts as ``id_prefix``'s."""
        return await run_blocking(None, self._index.damaged, session_file_stem(id_prefix))

    async def _summaries(self, parent: str | None) -> list[SessionSummary]:
        summaries, warnings = await run_blocking(None, self._index.summaries, parent)
        report_all(warnings)
        return summaries

    async def kept_digests(self, ids: Sequence[str] | None = None) -> dict[str, tuple[int, bytes]]:
        """``KeepsDigests``: the digests a listing kept (``dsh.store.jsonl_kept``) of ``ids``, or
        every one, each only while its file is unchanged since."""
        await self._enter()
        names = None if ids is None else {sid: self.encoding.file_name(sid) for sid in ids}
        return await run_blocking(None, self._index.kept_digests, names)

    async def keep_digests(self, digests: Sequence[tuple[str, int, bytes]]) -> None:
        """``KeepsDigests``: keep each digest with its file's kept summary, when that file is
        unchanged since a listing read it and holds as many events (else it is not kept)."""
        await self._enter()
        named = [  # a session this store appended to: no listing read it as it is now
            (self.encoding.file_name(sid), count, digest)
            for sid, count, digest in digests
            if sid not in self._writers
        ]
        if named:
            await run_blocking(None, self._index.keep_digests, named)

    async def newest_sessions(self, count: int) -> list[SessionSummary]:
        """``ListsNewest``: the ``count`` newest sessions and their descendants, picked from the
        files' headers; only those summarized."""
        return (await self._newest(count, roots=False))[1]

    async def newest_roots(self, count: int) -> tuple[int, list[SessionSummary]]:
        """``ListsNewest``: the session count, and the ``count`` newest top rows with their
        descendants, picked from the files' headers; only those summarized."""
        return await self._newest(count, roots=True)

    async def _newest(self, count: int, *, roots: bool) -> tuple[int, list[SessionSummary]]:
        await self._enter()
        await self._settle(None)
        total, found, warnings = await run_blocking(None, self._index.newest, count, roots)
        report_all(warnings)
        return total, found

    async def latest_top_level(self, cwd: str) -> str | None:
        """``FindsLatest``: the session ``--continue`` takes in ``cwd``, a file's last event time
        read from its end when its seal vouches for it (``dsh.store.jsonl_tail``)."""
        await self._enter()
        await self._settle(None)
        found, warnings = await run_blocking(None, self._index.latest, cwd)
        report_all(warnings)
        return found

    async def _fork_child(self, parent_id: str, options: ForkOptions) -> SessionSummary:
        child, warnings = await run_blocking(None, self._fork_sync, parent_id, options)
        report_all(warnings)
        return child

    async def _remove(self, ids: list[str]) -> None:
        """Delete the sessions' files (journalled: all or none)."""
        for sid in ids:
            with self._starts_lock:
                self._starts.pop(sid, None)
            w = self._writers.pop(sid, None)
            if w is not None:
                async with w.lock:
                    await self._flush(w, durable=True)
                    os.close(w.fd)
                    os.close(w.seal_fd)
        names = [self.encoding.file_name(sid) for sid in ids]
        try:
            await run_blocking(None, delete_files, self.root, names)
            for name in names:  # after the commit: a seal left by a crash is replaced by the next create
                remove_seal(self.root / name)
            await run_blocking(None, self._index.forget, names)
            await run_blocking(None, jsonl_spool.drop_sessions, self.root, ids)
        except OSError as exc:
            raise StoreError(f"cannot delete from {self.root}: {exc.strerror or exc}") from exc

    async def _put_blob(self, attachment_id: str, media_type: str, data: bytes) -> None:
        await run_blocking(None, write_blob, self.root, attachment_id, media_type, data)

    async def _get_blob(self, attachment_id: str) -> tuple[str, bytes] | None:
        return await run_blocking(None, read_blob, self.root, attachment_id)

    async def _spool_put(self, session_id: str, batch: SpoolBatch, chunks: bytes) -> None:
        await run_blocking(None, jsonl_spool.put, self.root, session_id, batch, chunks)

    async def _spool_get(self, session_id: str, after: int) -> list[Spooled]:
        return await run_blocking(None, jsonl_spool.get, self.root, session_id, after)

    async def _spool_drop(self, session_id: str, through: int) -> None:
        await run_blocking(None, jsonl_spool.drop, self.root, session_id, through)

    async def _shutdown(self) -> None:
        """Write buffered events durably, close every append handle, release the leases."""
        first_error: BaseException | None = None
        for w in list(self._writers.values()):
            async with w.lock:
                try:
                    await self._flush(w, durable=True)
                except Exception as exc:  # keep closing the other handles
                    first_error = first_error or exc
                finally:
                    os.close(w.fd)
                    os.close(w.seal_fd)
        self._writers.clear()
        try:
            await self._leases.close()
        except Exception as exc:
            first_error = first_error or exc
        if first_error is not None:
            raise first_error

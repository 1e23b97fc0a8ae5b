"""``SqliteEventStore``: every session in one SQLite database file (the embedded default).

- Ownership: ``PRAGMA application_id`` is :data:`APPLICATION_ID` and ``user_version`` is
  :data:`SCHEMA_VERSION`. Opening refuses a foreign application id, any other non-zero
  schema version, and a non-empty database without our stamp; versions 2 and 3 are migrated
  in place (``sqlite_schema.MIGRATABLE``).
- ``sessions``: one row per session, the header fields as columns, including
  ``is_seeded`` and ``inherited_event_count`` (the persisted cut). ``events``: keyed by
  ``(session_id, seq)`` with ``type``, ``time`` and the JSON of the remaining fields; a
  settlement's stream and wire in ``tail``, so a surface read (``load(streams=False)``)
  never reads them. A write's runs of stream chunks are one row each (``chunk_runs``): every
  read splices them in (``chunk_runs.read_runs``).
- WAL, ``busy_timeout``, ``synchronous=FULL``. One connection per store, used by the store's
  own worker thread, so sqlite never blocks the event loop — with one exception: a read of
  at most :data:`INLINE_TAIL` events (a tail, ``read_from`` near the end) runs on the
  caller's thread when the connection is free, without waiting on a busy database (it falls
  back to the worker then): the thread hop cost more than the read. ``durable=False``
  appends are buffered and written in one transaction at the next durable append, read or
  ``close()``; a durable append commits (and so fsyncs) before returning.
- Fork is one transaction: the child row, a ``fork_refs`` row naming the parent and the cut
  (the prefix is not copied: :mod:`dsh.store.fork_refs` resolves it on every read), and the
  tagged marker.
- ``create_batch`` (import) is one transaction. Unknown header fields of imported logs go
  to ``session_extras``, a side table created on first need (an older dsh ignores it).
- ``delete`` is one transaction over the session and its descendants (events, extras, rows).
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, overload

import orjson

from dsh import jsonx
from dsh.errors import (
    CorruptLogError,
    DshError,
    InvalidEventError,
    ParentReferencedError,
    SeqConflictError,
    SessionExistsError,
    SessionNotFoundError,
    StoreClosedError,
    StoreError,
    UnsupportedFormatError,
)
from dsh.events import Event, SessionHeader, check_cut
from dsh.events.fork import ForkAt, ForkOptions, TurnMarks, cut_after, fork_plan, probe_cut, resolve_cut
from dsh.events.sparse import SparseLog, UnbuiltRun
from dsh.store import sqlite_spool
from dsh.store.base import LoadedSession, SessionSummary
from dsh.store.buffer import AppendBuffer
from dsh.store.bulk import paused_gc
from dsh.store.chunk_runs import insert_rows, read_runs
from dsh.store.extras import decode_extra
from dsh.store.fork_marks import (
    ENDS_WHERE,
    FIRST_END_WHERE,
    LAST_START_WHERE,
    EndHit,
    drive,
    marks_from_rows,
    row_turn,
)
from dsh.store.fork_refs import INDEX, SQLITE_CREATE, Segment, chain_sql, insert_sql, segments
from dsh.store.fork_refs import TABLE as REFS_TABLE
from dsh.store.front import BufferedFront
from dsh.store.lease import FileLeases, LeaseTable
from dsh.store.rows import events_from_rows, header_from_row, summary_from_row
from dsh.store.spool import SpoolBatch, Spooled
from dsh.store.sqlite_schema import (
    APPLICATION_ID,
    BUSY_TIMEOUT_S,
    COUNT_SESSIONS,
    CREATE_ATTACHMENTS,
    CREATE_DIGESTS,
    CREATE_EXTRAS,
    DIGESTS_TABLE,
    EXTRAS_TABLE,
    HAS_ATTACHMENTS,
    HAS_DIGESTS,
    HAS_EXTRAS,
    HAS_REFS,
    HEADER_NEXT_SEQ,
    INSERT_ATTACHMENT,
    INSERT_EVENT,
    INSERT_EXTRA,
    INSERT_SESSION,
    KEEP_DIGEST,
    LAST_END_IN,
    LATEST_TOP_LEVEL,
    MAX_SEQ,
    NEWEST,
    NEWEST_ROOTS,
    NEXT_SEQ,
    SCHEMA_VERSION,
    SELECT_ATTACHMENT,
    SELECT_EVENTS_IN,
    SELECT_EXTRA,
    SELECT_HEADER,
    SELECT_SURFACE_IN,
    SUMMARY,
    Row,
    connect,
    event_row,
    immediate,
    session_row,
    snapshot,
    unpack_data,
)
from dsh.store.threads import run_blocking

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SqliteEventStore"]

T = TypeVar("T")
INLINE_TAIL: Final = 256
"""A ``read_from`` of at most this many events runs on the caller's thread when the connection
is free (:meth:`SqliteEventStore._inline`): ~0.1 ms of SQL against a ~0.2 ms thread hop."""


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` is the database being locked by another connection (try again later)."""
    return getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def _busy_wait(conn: sqlite3.Connection, on: bool) -> None:
    """Turn the connection's busy timeout on (:data:`BUSY_TIMEOUT_S`) or off."""
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000) if on else 0}")


_NewSession = tuple[SessionHeader, int, list[Row], bytes | None]
"""A session to create: header, cut, event rows, extra header fields (JSON or ``None``)."""


class SqliteEventStore(BufferedFront):
    """An ``EventStore`` in one SQLite database file (``sqlite:PATH``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsh-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._in_use = threading.Lock()
        """Held while the connection is used: by the worker, or by an inline read (:meth:`_inline`)."""
        self._buffer: AppendBuffer[Row] = AppendBuffer(
            next_seq=lambda sid: self._call(self._next_seq_sync, sid),
            to_row=event_row,
            insert=lambda sid, rows: self._call(self._insert_sync, sid, rows[0][1], rows),
        )
        self._leases = LeaseTable(FileLeases(self.lease_dir))
        self._has_extras = False
        self._has_refs = False
        self._closed = False
        self._no_wait = False
        """The connection's busy timeout is off: an inline read left it so (its next reads too
        need it off; the worker turns it on again before it uses the connection)."""

    def local_files(self) -> tuple[Path, ...]:
        """``HasLocalFiles``: the database, its journal, WAL and shared-memory files, the leases."""
        sidecars = (self.path.with_name(f"{self.path.name}-{s}") for s in ("journal", "wal", "shm"))
        return (self.path, *sidecars, self.lease_dir)

    @property
    def lease_dir(self) -> Path:
        """Where the session lease files live: ``<db>-leases/<id>.lock`` beside the database."""
        return self.path.parent / f"{self.path.name}-leases"

    # -- the worker thread: connection, ownership, statements ----------------------------

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return connect(self.path)

    def _guarded(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in the worker thread, the connection held."""
        with self._in_use:
            if self._conn is None:
                self._conn = self._mapped(self._connect)
            if self._no_wait:
                self._mapped(_busy_wait, self._conn, True)
                self._no_wait = False
            return self._mapped(fn, self._conn, *args)

    def _inline(self, fn: Callable[..., T | None], *args: Any) -> T | None:
        """``fn(conn, *args)`` on the caller's thread, or ``None`` (then the worker does the
        work): when the connection is not open yet or is in use, and when ``fn`` says so. The
        busy timeout is off meanwhile: ``fn`` returns ``None`` on a busy database (:func:`_busy`)
        rather than waiting on the event loop."""
        conn = self._conn
        if conn is None or not self._in_use.acquire(blocking=False):
            return None
        try:
            if self._conn is not conn:  # closed meanwhile
                return None
            if not self._no_wait:  # off until the worker's turn: back-to-back reads do not toggle it
                self._mapped(_busy_wait, conn, False)
                self._no_wait = True
            result: T | None = self._mapped(fn, conn, *args)
            return result
        finally:
            self._in_use.release()

    def _mapped(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, its sqlite/OS errors mapped once, here."""
        try:
            return fn(*args)
        except DshError:
            raise
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
                raise UnsupportedFormatError(f"{self.path} is not an SQLite database") from exc
            raise StoreError(f"{self.path}: sqlite error: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: sqlite error: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"cannot open {self.path}: {exc.strerror or exc}") from exc

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await run_blocking(self._executor, self._guarded, fn, *args)

    def _header(self, row: Sequence[Any]) -> tuple[SessionHeader, int]:
        return header_from_row(row, str(self.path))

    def _header_row(self, conn: sqlite3.Connection, session_id: str) -> tuple[SessionHeader, int]:
        return self._header(self._row(conn, session_id, SELECT_HEADER))

    def _row(self, conn: sqlite3.Connection, session_id: str, sql: str) -> Sequence[Any]:
        """The session's ``sessions`` row as ``sql`` selects it (``?``: its id)."""
        row: Sequence[Any] | None = conn.execute(sql, (session_id,)).fetchone()
        if row is None:
            raise SessionNotFoundError(session_id, str(self.path))
        return row

    def _chain(self, conn: sqlite3.Connection, session_id: str) -> list[Any]:
        """The session's fork references (:func:`dsh.store.fork_refs.chain_sql`; none: no table yet)."""
        if not self._has_refs:
            self._has_refs = conn.execute(HAS_REFS).fetchone() is not None
            if not self._has_refs:
                return []
        return conn.execute(chain_sql("?"), (session_id,)).fetchall()

    def _segments(self, conn: sqlite3.Connection, session_id: str, start: int = 0) -> list[Segment]:
        return segments(session_id, self._chain(conn, session_id), start)

    @overload
    def _events(
        self,
        conn: sqlite3.Connection,
        sid: str,
        start: int,
        whole: Literal[True] = True,
        *,
        parts: list[Segment] | None = None,
    ) -> list[Event]: ...

    @overload
    def _events(
        self,
        conn: sqlite3.Connection,
        sid: str,
        start: int,
        whole: bool,
        *,
        parts: list[Segment] | None = None,
    ) -> list[Event] | SparseLog: ...

    def _events(
        self,
        conn: sqlite3.Connection,
        sid: str,
        start: int,
        whole: bool = True,
        *,
        parts: list[Segment] | None = None,
    ) -> list[Event] | SparseLog:
        """The events from ``start`` on, a fork's referenced prefix resolved (``parts``: its
        segments, when already read; ``whole=False``: a surface read, ``dsh.events.deferred``,
        its packed runs unbuilt: ``dsh.events.sparse``)."""
        where = str(self.path)
        ranges = [
            (p.session_id, p.start, MAX_SEQ if p.end is None else p.end)
            for p in (self._segments(conn, sid, start) if parts is None else parts)
        ]
        with paused_gc():  # a whole read's runs are built first: many objects, no cycle
            runs: dict[int, list[Event] | UnbuiltRun] = {}
            for part in ranges:
                runs.update(read_runs(conn, *part, whole, where))
            select = SELECT_EVENTS_IN if whole else SELECT_SURFACE_IN
            rows = itertools.chain.from_iterable(conn.execute(select, part) for part in ranges)
            return events_from_rows(
                rows, start, where, sid, zlib.decompress, (zlib.error,), whole=whole, runs=runs
            )

    def _extra(self, conn: sqlite3.Connection, session_id: str) -> dict[str, Any]:
        """The session's unknown header fields (the side table may not exist yet)."""
        if not self._has_extras:
            self._has_extras = conn.execute(HAS_EXTRAS).fetchone() is not None
            if not self._has_extras:
                return {}
        row = conn.execute(SELECT_EXTRA, (session_id,)).fetchone()
        try:
            return decode_extra(None if row is None else row[0], f"{self.path}: session {session_id}")
        except (orjson.JSONDecodeError, InvalidEventError) as exc:
            raise CorruptLogError(f"{self.path}: session {session_id}: bad extra header fields") from exc

    def _load_sync(self, conn: sqlite3.Connection, session_id: str, streams: bool = True) -> LoadedSession:
        with snapshot(conn):
            header, cut = self._header_row(conn, session_id)
            events = self._events(conn, session_id, 0, streams)
            extra = self._extra(conn, session_id)
        try:
            check_cut(header, cut, events)
        except InvalidEventError as exc:
            raise CorruptLogError(f"{self.path}: {exc}") from exc
        return LoadedSession(header, cut, events, header_extra=extra)

    def _read_from_sync(self, conn: sqlite3.Connection, session_id: str, seq: int) -> list[Event]:
        with snapshot(conn):
            self._header_row(conn, session_id)
            return self._events(conn, session_id, seq)

    def _read_tail_sync(self, conn: sqlite3.Connection, session_id: str, seq: int) -> list[Event] | None:
        """:meth:`_read_from_sync` when it is at most :data:`INLINE_TAIL` events; ``None`` when
        it is more, or the database is busy."""
        try:
            with snapshot(conn):
                row = self._row(conn, session_id, HEADER_NEXT_SEQ)
                self._header(row)
                own = row[-1]  # where the last segment ends
                parts = self._segments(conn, session_id, seq)
                span = sum((own if p.end is None else p.end) - p.start for p in parts)
                return self._events(conn, session_id, seq, parts=parts) if span <= INLINE_TAIL else None
        except sqlite3.OperationalError as exc:
            if _busy(exc):
                return None
            raise

    def _next_seq_sync(self, conn: sqlite3.Connection, session_id: str) -> int:
        with snapshot(conn):
            self._header_row(conn, session_id)
            next_seq: int = conn.execute(NEXT_SEQ, (session_id,)).fetchone()[0]
            return next_seq

    def _create_sync(self, conn: sqlite3.Connection, items: list[_NewSession]) -> None:
        """Create every session of ``items`` in one transaction (all or none)."""
        with immediate(conn):
            if any(extra is not None for *_, extra in items):
                conn.execute(CREATE_EXTRAS)
            for header, cut, rows, extra in items:
                self._refuse_existing(conn, header.id)
                conn.execute(INSERT_SESSION, session_row(header, cut))
                insert_rows(conn, rows)
                if extra is not None:
                    conn.execute(INSERT_EXTRA, (header.id, extra.decode()))

    def _insert_sync(self, conn: sqlite3.Connection, session_id: str, first: int, rows: list[Row]) -> None:
        with immediate(conn):
            next_seq = conn.execute(NEXT_SEQ, (session_id,)).fetchone()[0]
            if next_seq != first:
                raise SeqConflictError(session_id, next_seq, first)
            insert_rows(conn, rows)

    def _summaries_sync(self, conn: sqlite3.Connection, parent: str | None) -> list[SessionSummary]:
        if parent is None:
            rows = conn.execute(f"{SUMMARY} ORDER BY s.created_at, s.id").fetchall()
        else:
            sql = f"{SUMMARY} WHERE s.parent_session = ? ORDER BY s.created_at, s.id"
            rows = conn.execute(sql, (parent,)).fetchall()
        return [summary_from_row(row, str(self.path)) for row in rows]

    def _marks(self, conn: sqlite3.Connection, parts: list[Segment], length: int, where: str) -> TurnMarks:
        """The turn boundaries of the log ``parts`` make up (:mod:`dsh.store.fork_marks`)."""
        select = "SELECT seq, data FROM events WHERE session_id = ? AND seq >= ? AND seq < ? AND "
        ends: list[Any] = []
        start = None
        for p in parts:
            bounds = (p.session_id, p.start, p.end if p.end is not None else MAX_SEQ)
            ends += conn.execute(select + ENDS_WHERE, bounds).fetchall()
            start = conn.execute(select + LAST_START_WHERE, bounds).fetchone() or start
        return marks_from_rows(ends, start, length, unpack_data, where)

    def _last_end(self, conn: sqlite3.Connection, parts: list[Segment]) -> int | None:
        """The seq of the last ``turn/end`` of the log ``parts`` make up."""
        for p in reversed(parts):
            last: int | None = conn.execute(
                LAST_END_IN,
                (p.session_id, p.start, p.end if p.end is not None else MAX_SEQ),
            ).fetchone()[0]
            if last is not None:
                return last
        return None

    def _first_end(self, conn: sqlite3.Connection, parts: list[Segment], seq: int, where: str) -> EndHit:
        """The first ``turn/end`` at or after ``seq`` of the log ``parts`` make up (an index seek)."""
        select = "SELECT seq, data FROM events WHERE session_id = ? AND seq >= ? AND seq < ? AND "
        for p in parts:
            end = p.end if p.end is not None else MAX_SEQ
            if end > seq:
                row = conn.execute(
                    select + FIRST_END_WHERE, (p.session_id, max(seq, p.start), end)
                ).fetchone()
                if row is not None:
                    return int(row[0]), row_turn(row[1], unpack_data, where)
        return None

    def _cut(self, conn: sqlite3.Connection, parent_id: str, at: ForkAt | None) -> int:
        """Where a fork of the parent at ``at`` cuts (``dsh.events.fork``), read through the index."""
        parts = self._segments(conn, parent_id)
        if at is None:
            return cut_after(self._last_end(conn, parts))
        where = f"{self.path}: session {parent_id}"
        length = conn.execute(NEXT_SEQ, (parent_id,)).fetchone()[0]
        found = drive(probe_cut(at, length), lambda seq: self._first_end(conn, parts, seq, where))
        return (
            found
            if found is not None
            else resolve_cut(parent_id, self._marks(conn, parts, length, where), at)
        )

    def _fork_sync(self, conn: sqlite3.Connection, parent_id: str, options: ForkOptions) -> SessionSummary:
        with immediate(conn):
            parent, _ = self._header_row(conn, parent_id)
            n = self._cut(conn, parent_id, options.at)
            plan = fork_plan(parent, n, options)
            header = plan.header
            self._refuse_existing(conn, header.id)
            conn.execute(INSERT_SESSION, session_row(header, n))
            if plan.marker is not None:
                conn.execute(SQLITE_CREATE)
                conn.execute(INDEX)
                conn.execute(insert_sql("?"), (header.id, parent_id, n))
                conn.execute(INSERT_EVENT, event_row(header.id, plan.marker))
        return SessionSummary(header, n, n + 1 if n else 0)

    def _delete_sync(self, conn: sqlite3.Connection, ids: list[str]) -> None:
        """Delete every session of ``ids`` (events, extras, references, header) in one transaction;
        a session outside ``ids`` still referencing one of them refuses it all."""
        with immediate(conn):
            has_extras = conn.execute(HAS_EXTRAS).fetchone() is not None
            has_digests = conn.execute(HAS_DIGESTS).fetchone() is not None
            has_refs = conn.execute(HAS_REFS).fetchone() is not None
            if has_refs:
                outside = sorted(set(self._referencing_sync(conn, ids)) - set(ids))
                if outside:
                    raise ParentReferencedError(ids[-1], outside)
            for sid in ids:
                conn.execute("DELETE FROM events WHERE session_id = ?", (sid,))
                if has_extras:
                    conn.execute(f"DELETE FROM {EXTRAS_TABLE} WHERE session_id = ?", (sid,))
                if has_digests:
                    conn.execute(f"DELETE FROM {DIGESTS_TABLE} WHERE session_id = ?", (sid,))
                if has_refs:
                    conn.execute(f"DELETE FROM {REFS_TABLE} WHERE session_id = ?", (sid,))
                conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))
            sqlite_spool.drop_sessions(conn, ids)

    @staticmethod
    def _kept_sync(conn: sqlite3.Connection, ids: Sequence[str] | None) -> dict[str, tuple[int, bytes]]:
        sql = f"SELECT session_id, event_count, digest FROM {DIGESTS_TABLE}"
        with snapshot(conn):
            if conn.execute(HAS_DIGESTS).fetchone() is None:
                return {}
            if ids is None:
                rows = conn.execute(sql).fetchall()
            else:
                sql += " WHERE session_id IN (SELECT value FROM json_each(?))"
                rows = conn.execute(sql, (jsonx.dumps(list(ids)).decode(),)).fetchall()
        return {sid: (count, digest.encode()) for sid, count, digest in rows}

    @staticmethod
    def _keep_sync(conn: sqlite3.Connection, digests: Sequence[tuple[str, int, bytes]]) -> None:
        with immediate(conn):
            conn.execute(CREATE_DIGESTS)
            conn.executemany(KEEP_DIGEST, [(count, digest.decode(), sid) for sid, count, digest in digests])

    async def kept_digests(self, ids: Sequence[str] | None = None) -> dict[str, tuple[int, bytes]]:
        """``KeepsDigests``: the kept digests of ``ids``, or every one (none before the first is kept)."""
        await self._enter()
        return await self._call(self._kept_sync, ids)

    def _newest_sync(self, conn: sqlite3.Connection, count: int) -> list[SessionSummary]:
        return [summary_from_row(row, str(self.path)) for row in conn.execute(NEWEST, (count,)).fetchall()]

    async def newest_sessions(self, count: int) -> list[SessionSummary]:
        """``ListsNewest``: the ``count`` newest sessions and their descendants, one query."""
        await self._enter()
        await self._settle(None)
        return await self._call(self._newest_sync, count)

    def _newest_roots_sync(self, conn: sqlite3.Connection, count: int) -> tuple[int, list[SessionSummary]]:
        with snapshot(conn):
            total: int = conn.execute(COUNT_SESSIONS).fetchone()[0]
            rows = conn.execute(NEWEST_ROOTS, (count,)).fetchall()
        return total, [summary_from_row(row, str(self.path)) for row in rows]

    async def newest_roots(self, count: int) -> tuple[int, list[SessionSummary]]:
        """``ListsNewest``: the session count, and the ``count`` newest top rows with their
        descendants (one snapshot, two queries)."""
        await self._enter()
        await self._settle(None)
        return await self._call(self._newest_roots_sync, count)

    @staticmethod
    def _latest_sync(conn: sqlite3.Connection, cwd: str) -> str | None:
        row = conn.execute(LATEST_TOP_LEVEL, (cwd,)).fetchone()
        return None if row is None else str(row[0])

    async def latest_top_level(self, cwd: str) -> str | None:
        """``FindsLatest``: the session ``--continue`` takes in ``cwd``, one query."""
        await self._enter()
        await self._settle(None)
        return await self._call(self._latest_sync, cwd)

    async def keep_digests(self, digests: Sequence[tuple[str, int, bytes]]) -> None:
        """``KeepsDigests``: keep these, in one transaction (sessions deleted meanwhile skipped)."""
        await self._enter()
        if digests:
            await self._call(self._keep_sync, digests)

    def _referencing_sync(self, conn: sqlite3.Connection, ids: list[str]) -> list[str]:
        if conn.execute(HAS_REFS).fetchone() is None:
            return []
        sql = f"SELECT session_id FROM {REFS_TABLE} WHERE source IN (SELECT value FROM json_each(?))"
        return [str(r[0]) for r in conn.execute(sql, (jsonx.dumps(ids).decode(),))]

    def _exists_sync(self, conn: sqlite3.Connection, session_id: str) -> bool:
        return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None

    def _refuse_existing(self, conn: sqlite3.Connection, session_id: str) -> None:
        if self._exists_sync(conn, session_id):
            raise SessionExistsError(session_id, str(self.path))

    def _close_sync(self) -> None:
        with self._in_use:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._no_wait = False

    # -- the storage primitives of StoreFront ---------------------------------------------

    @property
    def where(self) -> str:
        """The database file's path."""
        return str(self.path)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"the SQLite store {self.path} is closed")

    async def _store_one(self, header: SessionHeader, seed: Sequence[Event], cut: int) -> None:
        rows = [event_row(header.id, e) for e in seed]
        await self._call(self._create_sync, [(header, cut, rows, None)])

    async def _store_many(self, sessions: Sequence[LoadedSession], extras: Sequence[bytes | None]) -> None:
        """Create every session in one transaction: all of them, or none."""
        items = [
            (s.header, s.inherited_event_count, [event_row(s.header.id, e) for e in s.events], extra)
            for s, extra in zip(sessions, extras, strict=True)
        ]
        await self._call(self._create_sync, items)

    async def _load_session(self, session_id: str, streams: bool = True) -> LoadedSession:
        return await self._call(self._load_sync, session_id, streams)

    async def _read_events(self, session_id: str, seq: int) -> list[Event]:
        tail = self._inline(self._read_tail_sync, session_id, seq)
        return tail if tail is not None else await self._call(self._read_from_sync, session_id, seq)

    def _header_sync(self, conn: sqlite3.Connection, session_id: str) -> SessionHeader:
        return self._header_row(conn, session_id)[0]

    async def _read_header(self, session_id: str) -> SessionHeader:
        return await self._call(self._header_sync, session_id)

    async def _exists_session(self, session_id: str) -> bool:
        return await self._call(self._exists_sync, session_id)

    @staticmethod
    def _put_blob_sync(conn: sqlite3.Connection, attachment_id: str, media_type: str, data: bytes) -> None:
        with immediate(conn):
            conn.execute(CREATE_ATTACHMENTS)
            conn.execute(INSERT_ATTACHMENT, (attachment_id, media_type, data))

    @staticmethod
    def _get_blob_sync(conn: sqlite3.Connection, attachment_id: str) -> tuple[str, bytes] | None:
        with snapshot(conn):
            if conn.execute(HAS_ATTACHMENTS).fetchone() is None:
                return None
            row = conn.execute(SELECT_ATTACHMENT, (attachment_id,)).fetchone()
        return None if row is None else (str(row[0]), bytes(row[1]))

    async def _put_blob(self, attachment_id: str, media_type: str, data: bytes) -> None:
        await self._call(self._put_blob_sync, attachment_id, media_type, data)

    async def _get_blob(self, attachment_id: str) -> tuple[str, bytes] | None:
        return await self._call(self._get_blob_sync, attachment_id)

    async def _summaries(self, parent: str | None) -> list[SessionSummary]:
        return await self._call(self._summaries_sync, parent)

    async def _spool_put(self, session_id: str, batch: SpoolBatch, chunks: bytes) -> None:
        await self._call(sqlite_spool.put_sync, session_id, batch, chunks)

    async def _spool_get(self, session_id: str, after: int) -> list[Spooled]:
        return await self._call(sqlite_spool.get_sync, session_id, after)

    async def _spool_drop(self, session_id: str, through: int) -> None:
        await self._call(sqlite_spool.drop_sync, session_id, through)

    async def _fork_child(self, parent_id: str, options: ForkOptions) -> SessionSummary:
        return await self._call(self._fork_sync, parent_id, options)

    async def _referencing(self, ids: list[str]) -> list[str]:
        return await self._call(self._referencing_sync, ids)

    async def _remove(self, ids: list[str]) -> None:
        """Delete the sessions in one transaction."""
        await self._call(self._delete_sync, ids)

    async def _shutdown(self) -> None:
        """Commit buffered events, close the connection, stop the worker, release the leases."""
        try:
            await self._buffer.close()
        finally:
            try:
                await self._close_connection()
            finally:
                await self._leases.close()

    async def _close_connection(self) -> None:
        try:
            await run_blocking(self._executor, self._close_sync)
        finally:
            self._executor.shutdown(wait=False)

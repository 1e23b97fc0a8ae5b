"""``PostgresEventStore``: every session in one PostgreSQL database, shared by many workers and hosts.

- Layout and version policy: :mod:`dsh.store.postgres_schema` (a ``dsh_schema`` version row
  checked on connect, no migration; ``sessions`` with the header columns, ``is_seeded``,
  ``inherited_event_count`` and ``next_seq``; ``events`` keyed by ``(session_id, seq)``).
- URLs: :mod:`dsh.store.postgres_url` (``postgresql://user@host:5432/db?schema=NAME``).
  Construction does no I/O; the first operation connects, checks (or stamps) the schema
  and opens a ``psycopg_pool.AsyncConnectionPool``. ``close()`` closes the pool.
- Appends: one statement, hence one transaction, per batch. It advances the session
  row's ``next_seq`` only if it still equals the batch's first seq, so two writers on one
  session serialize on that row and the loser gets :class:`~dsh.errors.SeqConflictError`
  naming the session and seq; the ``(session_id, seq)`` primary key makes a duplicate
  impossible even so. The same statement ``NOTIFY``s ``dsh_events`` (delivered on commit),
  which :meth:`PostgresEventStore.listen` turns into wake-ups for live tailing.
  ``durable=False`` appends are buffered in process (visible to this handle's reads) and
  written at the next durable append, read of the session, or ``close()``.
- Fork: one transaction creating the child row, copying the parent's completed-turn
  prefix with one ``INSERT ... SELECT`` and writing the tagged marker.
- Delete: one transaction removing the session and its descendants (events, extras, rows).
- psycopg errors are mapped to dsh errors here and only here; messages name the URL with
  any password replaced by ``***``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import orjson
import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

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
)
from dsh.events import Event, SessionHeader, check_cut
from dsh.events.fork import ForkAt, ForkOptions, TurnMarks, cut_after, fork_plan, probe_cut, resolve_cut
from dsh.store import postgres_spool
from dsh.store.base import LeaseHolder, LoadedSession, SessionSummary
from dsh.store.buffer import AppendBuffer
from dsh.store.extras import decode_extra
from dsh.store.fork_marks import (
    ENDS_WHERE,
    FIRST_END_WHERE,
    LAST_START_WHERE,
    EndHit,
    adrive,
    marks_from_rows,
    row_turn,
)
from dsh.store.fork_refs import INDEX, POSTGRES_CREATE, Segment, chain_sql, insert_sql, segments
from dsh.store.front import BufferedFront
from dsh.store.lease import LeaseTable
from dsh.store.newest import latest_listed
from dsh.store.postgres_schema import (
    ADVISORY_LOCK,
    APPEND,
    COUNT_SESSIONS,
    CREATE,
    CREATE_ATTACHMENTS,
    CREATE_EXTRAS,
    EXISTS,
    HAS_ATTACHMENTS,
    HAS_EXTRAS,
    HAS_REFS,
    INSERT_ATTACHMENT,
    INSERT_EVENT,
    INSERT_EXTRA,
    INSERT_SESSION,
    LAST_END_IN,
    LATEST_TOP_LEVEL,
    LEASE_HOLDER,
    LIST_CHILDREN,
    LIST_SESSIONS,
    LOCK_SCHEMA,
    NEWEST,
    NEWEST_ROOTS,
    NEXT_SEQ,
    NOTIFY_CHANNEL,
    REFERENCING,
    SCHEMA_VERSION,
    SELECT_ATTACHMENT,
    SELECT_EVENTS,
    SELECT_EXTRA,
    SESSION,
    TRY_LEASE,
    UNLOCK_LEASE,
    Row,
    event_row,
    header_params,
    lease_application_name,
    lease_key,
    lease_key_halves,
    notify_payload,
    parse_lease_application_name,
    prepare_database,
    rows_params,
    set_search_path,
)
from dsh.store.postgres_url import PostgresTarget, parse_postgres_url
from dsh.store.rows import events_from_rows, header_from_row, summary_from_row
from dsh.store.spool import SpoolBatch, Spooled

__all__ = ["SCHEMA_VERSION", "PostgresEventStore", "PostgresListener"]

Conn = psycopg.AsyncConnection[TupleRow]

DEFAULT_MAX_CONNECTIONS: Final = 4
DEFAULT_CONNECT_TIMEOUT_S: Final = 10
"""libpq ``connect_timeout`` unless the URL sets one (libpq's own default waits forever)."""


def _text_only(data: bytes) -> bytes:
    raise CorruptLogError(f"a PostgreSQL event row holds {len(data)} bytes, not JSON text")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PostgresListener:
    """Wake-ups for one session's appends, on a dedicated ``LISTEN`` connection."""

    def __init__(self, store: PostgresEventStore, conn: Conn, payload: str) -> None:
        self._store = store
        self._conn = conn
        self._payload = payload

    async def wait(self, max_wait: float) -> bool:
        """Wait up to ``max_wait`` seconds for an append to the session; ``False`` when none came."""
        deadline = time.monotonic() + max_wait
        async with self._store.mapped_errors():
            while (remaining := deadline - time.monotonic()) > 0:
                got = [n async for n in self._conn.notifies(timeout=remaining, stop_after=1)]
                if not got:
                    return False
                if any(n.payload == self._payload for n in got):
                    return True
        return False


class _PostgresLeases:
    """Session leases as session-level advisory locks, one dedicated connection per lease.

    The server releases the lock when the connection ends, so a holder that dies (or loses
    its connection) frees the session. A release unlocks explicitly before closing: the
    server drops a closed connection's locks only when its backend gets to it, and the
    next writer must not see the session busy after ``release()`` returned. While a writer
    waits, one connection per session is kept for the retries.
    """

    def __init__(self, store: PostgresEventStore) -> None:
        self._store = store
        self._spare: dict[str, Conn] = {}

    async def try_acquire(self, session_id: str, me: LeaseHolder) -> tuple[Conn, int] | None:
        store = self._store
        async with store.mapped_errors():
            await store._ready()
            key = lease_key(store._schema_name, session_id)
            conn = self._spare.pop(session_id, None)
            if conn is None:
                name = lease_application_name(me)
                conn = await psycopg.AsyncConnection.connect(
                    store.target.conninfo, **store._connect_kwargs, application_name=name
                )
            try:
                cur = await conn.execute(TRY_LEASE, (key,))
                row = await cur.fetchone()
            except BaseException:
                await conn.close()
                raise
        if row is not None and row[0] is True:
            return conn, key
        self._spare[session_id] = conn
        return None

    async def holder(self, session_id: str) -> LeaseHolder | None:
        store = self._store
        key = lease_key(store._schema_name, session_id)
        async with store._conn() as conn:
            cur = await conn.execute(LEASE_HOLDER, lease_key_halves(key))
            row = await cur.fetchone()
        return None if row is None else parse_lease_application_name(row[0])

    async def give_up(self, session_id: str) -> None:
        conn = self._spare.pop(session_id, None)
        if conn is not None:
            async with self._store.mapped_errors():
                await conn.close()

    async def release(self, lock: tuple[Conn, int]) -> None:
        conn, key = lock
        async with self._store.mapped_errors():
            try:
                if not conn.closed:
                    await conn.execute(UNLOCK_LEASE, (key,))
            except psycopg.Error:
                pass  # a broken connection: closing it is all that is left (the server frees it)
            finally:
                await conn.close()


class PostgresEventStore(BufferedFront):
    """An ``EventStore`` in a PostgreSQL database (``postgresql://...``), safe for many processes."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        connect_timeout: int = DEFAULT_CONNECT_TIMEOUT_S,
        create: bool = True,
    ) -> None:
        """Parse ``url`` (a ``UsageError`` when malformed); no connection is made yet.

        ``schema`` overrides the URL's ``schema=`` parameter; ``max_connections`` bounds the
        pool of this handle; ``create=False`` refuses a database without the dsh tables
        (:class:`~dsh.errors.StoreNotFoundError`) instead of creating them.
        """
        self._create_tables = create
        self.target: PostgresTarget = parse_postgres_url(url, schema)
        self.url = self.target.label
        """The URL with any password hidden: what messages show."""
        self.max_connections = max_connections
        self._connect_kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in conninfo_to_dict(self.target.conninfo):
            self._connect_kwargs["connect_timeout"] = connect_timeout
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._schema_name = ""
        self._open_lock = asyncio.Lock()
        self._buffer: AppendBuffer[Row] = AppendBuffer(
            next_seq=self._next_seq, to_row=lambda _sid, e: event_row(e), insert=self._insert
        )
        self._leases = LeaseTable(_PostgresLeases(self))
        self._has_extras = False
        self._has_refs = False
        self._has_spool = False
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresEventStore({self.url!r})"

    # -- connections and errors -----------------------------------------------------------

    @asynccontextmanager
    async def mapped_errors(self) -> AsyncIterator[None]:
        """Map psycopg and OS errors raised in the block to one-line dsh errors naming the URL."""
        try:
            yield
        except DshError:
            raise
        except psycopg.OperationalError as exc:
            reason = self.target.scrub(_first_line(exc))
            raise StoreError(f"{self.url}: PostgreSQL is unreachable or failed: {reason}") from exc
        except psycopg.Error as exc:
            reason = self.target.scrub(_first_line(exc))
            raise StoreError(f"{self.url}: PostgreSQL error: {reason}") from exc
        except OSError as exc:
            raise StoreError(f"{self.url}: {exc.strerror or exc}") from exc

    async def _connect(self) -> Conn:
        """A new autocommit connection with the store's search path (outside the pool)."""
        conn = await psycopg.AsyncConnection.connect(self.target.conninfo, **self._connect_kwargs)
        try:
            await set_search_path(conn, self.target.schema)
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _configure(self, conn: Conn) -> None:
        await set_search_path(conn, self.target.schema)

    async def _ready(self) -> AsyncConnectionPool[Conn]:
        """The pool, opened on first use after the schema check (callers map errors)."""
        if self._pool is not None:
            return self._pool
        async with self._open_lock:
            if self._pool is None:
                self._check_open()
                conn = await self._connect()
                try:
                    self._schema_name = await prepare_database(
                        conn, self.url, self.target.schema, create=self._create_tables
                    )
                finally:
                    await conn.close()
                pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
                    self.target.conninfo,
                    min_size=1,
                    max_size=max(1, self.max_connections),
                    open=False,
                    kwargs=self._connect_kwargs,
                    configure=self._configure,
                    name="dsh-store",
                )
                await pool.open(wait=False)
                self._pool = pool
            return self._pool

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[Conn]:
        async with self.mapped_errors():
            pool = await self._ready()
            async with pool.connection() as conn:
                yield conn

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"the PostgreSQL store {self.url} is closed")

    # -- rows -----------------------------------------------------------------------------

    def _header(self, row: Sequence[Any]) -> tuple[SessionHeader, int]:
        return header_from_row(row, str(self.url))

    async def _session(self, conn: Conn, session_id: str) -> tuple[SessionHeader, int, int]:
        """``(header, cut, next seq)`` of a stored session."""
        cur = await conn.execute(SESSION, (session_id,))
        row = await cur.fetchone()
        if row is None:
            raise SessionNotFoundError(session_id, self.url)
        header, cut = self._header(row)
        return header, cut, row[9]

    async def _segments(self, conn: Conn, session_id: str, start: int = 0) -> list[Segment]:
        """The row ranges of the session's log from ``start`` (:mod:`dsh.store.fork_refs`)."""
        if not self._has_refs:
            cur = await conn.execute(HAS_REFS)
            row = await cur.fetchone()
            self._has_refs = row is not None and row[0] is True
            if not self._has_refs:
                return [Segment(session_id, start, None)]
        cur = await conn.execute(chain_sql("%s"), (session_id,))
        return segments(session_id, await cur.fetchall(), start)

    async def _events(self, conn: Conn, session_id: str, start: int, end: int) -> list[Event]:
        """Events ``start <= seq < end`` (``end`` read from the session row first, so the
        result is one consistent prefix even while another writer appends)."""
        rows: list[Any] = []
        for part in await self._segments(conn, session_id, start):
            cur = await conn.execute(SELECT_EVENTS, (part.session_id, part.start, part.end or end))
            rows += await cur.fetchall()
        events = events_from_rows(rows, start, self.url, session_id, _text_only)
        expected = start + len(events)
        if expected < end:
            raise CorruptLogError(
                f"{self.url}: session {session_id}: events end at seq {expected}, the session row says {end}"
            )
        return events

    async def _extra(self, conn: Conn, session_id: str) -> dict[str, Any]:
        """The session's unknown header fields (the side table may not exist yet)."""
        if not self._has_extras:
            cur = await conn.execute(HAS_EXTRAS)
            row = await cur.fetchone()
            self._has_extras = row is not None and row[0] is True
            if not self._has_extras:
                return {}
        cur = await conn.execute(SELECT_EXTRA, (session_id,))
        found = await cur.fetchone()
        try:
            return decode_extra(None if found is None else found[0], f"{self.url}: session {session_id}")
        except (orjson.JSONDecodeError, InvalidEventError) as exc:
            raise CorruptLogError(f"{self.url}: session {session_id}: bad extra header fields") from exc

    async def _marks(self, conn: Conn, parts: list[Segment], length: int, where: str) -> TurnMarks:
        """The turn boundaries of the log ``parts`` make up (:mod:`dsh.store.fork_marks`)."""
        select = "SELECT seq, data FROM events WHERE session_id = %s AND seq >= %s AND seq < %s AND "
        ends: list[Any] = []
        start = None
        for p in parts:
            bounds = (p.session_id, p.start, p.end if p.end is not None else length)
            cur = await conn.execute(select + ENDS_WHERE, bounds)
            ends += await cur.fetchall()
            cur = await conn.execute(select + LAST_START_WHERE, bounds)
            start = await cur.fetchone() or start
        return marks_from_rows(ends, start, length, lambda d: d, where)

    async def _first_end(self, conn: Conn, parts: list[Segment], seq: int, length: int, where: str) -> EndHit:
        """The first ``turn/end`` at or after ``seq`` of the log ``parts`` make up (an index seek)."""
        select = "SELECT seq, data FROM events WHERE session_id = %s AND seq >= %s AND seq < %s AND "
        for p in parts:
            end = p.end if p.end is not None else length
            if end > seq:
                cur = await conn.execute(select + FIRST_END_WHERE, (p.session_id, max(seq, p.start), end))
                row = await cur.fetchone()
                if row is not None:
                    return int(row[0]), row_turn(row[1], lambda d: d, where)
        return None

    async def _cut(self, conn: Conn, parent_id: str, length: int, at: ForkAt | None) -> int:
        """Where a fork of the parent at ``at`` cuts (``dsh.events.fork``), read through the index."""
        parts = await self._segments(conn, parent_id)
        if at is None:
            return cut_after(await self._last_end(conn, parts, length))
        where = f"{self.url}: session {parent_id}"
        found = await adrive(
            probe_cut(at, length), lambda seq: self._first_end(conn, parts, seq, length, where)
        )
        if found is not None:
            return found
        return resolve_cut(parent_id, await self._marks(conn, parts, length, where), at)

    async def _last_end(self, conn: Conn, parts: list[Segment], length: int) -> int | None:
        """The seq of the last ``turn/end`` of the log ``parts`` make up."""
        for p in reversed(parts):
            cur = await conn.execute(
                LAST_END_IN, (p.session_id, p.start, p.end if p.end is not None else length)
            )
            row = await cur.fetchone()
            if row is not None and row[0] is not None:
                last: int = row[0]
                return last
        return None

    async def _load(self, conn: Conn, session_id: str) -> LoadedSession:
        header, cut, end = await self._session(conn, session_id)
        events = await self._events(conn, session_id, 0, end)
        extra = await self._extra(conn, session_id)
        try:
            check_cut(header, cut, events)
        except InvalidEventError as exc:
            raise CorruptLogError(f"{self.url}: {exc}") from exc
        return LoadedSession(header, cut, events, header_extra=extra)

    async def _next_seq(self, session_id: str) -> int:
        async with self._conn() as conn:
            cur = await conn.execute(NEXT_SEQ, (session_id,))
            row = await cur.fetchone()
        if row is None:
            raise SessionNotFoundError(session_id, self.url)
        next_seq: int = row[0]
        return next_seq

    async def _insert(self, session_id: str, rows: list[Row]) -> None:
        first = rows[0][0]
        params = {
            "sid": session_id,
            "first": first,
            "end": first + len(rows),
            "channel": NOTIFY_CHANNEL,
            "payload": notify_payload(self._schema_name, session_id),
            **rows_params(rows),
        }
        async with self._conn() as conn:
            cur = await conn.execute(APPEND, params)
            if cur.rowcount == 1:
                return
            cur = await conn.execute(NEXT_SEQ, (session_id,))
            row = await cur.fetchone()
        if row is None:
            raise SessionNotFoundError(session_id, self.url)
        raise SeqConflictError(session_id, row[0], first)

    # -- the storage primitives of StoreFront ----------------------------------------------

    @property
    def where(self) -> str:
        """The URL, password as ``***``."""
        return self.url

    async def _store_one(self, header: SessionHeader, seed: Sequence[Event], cut: int) -> None:
        rows = [event_row(e) for e in seed]
        params = {**header_params(header, cut, len(rows)), **rows_params(rows)}
        async with self._conn() as conn:
            cur = await conn.execute(CREATE, params)
            row = await cur.fetchone()
        if row is None or row[0] != 1:
            raise SessionExistsError(header.id, self.url)

    async def _store_many(self, sessions: Sequence[LoadedSession], extras: Sequence[bytes | None]) -> None:
        """Create every session in one transaction: all of them, or none."""
        batch = []
        for s in sessions:
            rows = [event_row(e) for e in s.events]
            batch.append(
                (
                    s.header.id,
                    {**header_params(s.header, s.inherited_event_count, len(rows)), **rows_params(rows)},
                )
            )
        async with self._conn() as conn, conn.transaction():
            if any(extra is not None for extra in extras):
                await conn.execute(LOCK_SCHEMA, (ADVISORY_LOCK,))  # one creator of the side table
                await conn.execute(CREATE_EXTRAS)
            for (sid, params), extra in zip(batch, extras, strict=True):
                cur = await conn.execute(CREATE, params)
                row = await cur.fetchone()
                if row is None or row[0] != 1:
                    raise SessionExistsError(sid, self.url)
                if extra is not None:
                    await conn.execute(INSERT_EXTRA, (sid, extra.decode()))

    async def _load_session(self, session_id: str, streams: bool = True) -> LoadedSession:
        async with self._conn() as conn:
            return await self._load(conn, session_id)

    async def _read_events(self, session_id: str, seq: int) -> list[Event]:
        async with self._conn() as conn:
            _, _, end = await self._session(conn, session_id)
            return await self._events(conn, session_id, seq, end)

    async def _put_blob(self, attachment_id: str, media_type: str, data: bytes) -> None:
        async with self._conn() as conn, conn.transaction():
            await conn.execute(LOCK_SCHEMA, (ADVISORY_LOCK,))  # one creator of the side table
            await conn.execute(CREATE_ATTACHMENTS)
            await conn.execute(INSERT_ATTACHMENT, (attachment_id, media_type, data))

    async def _get_blob(self, attachment_id: str) -> tuple[str, bytes] | None:
        async with self._conn() as conn:
            cur = await conn.execute(HAS_ATTACHMENTS)
            has = await cur.fetchone()
            if has is None or not has[0]:
                return None
            cur = await conn.execute(SELECT_ATTACHMENT, (attachment_id,))
            row = await cur.fetchone()
        return None if row is None else (str(row[0]), bytes(row[1]))

    async def _spool_put(self, session_id: str, batch: SpoolBatch, chunks: bytes) -> None:
        async with self._conn() as conn:
            if not self._has_spool:
                await postgres_spool.create(conn)
                self._has_spool = True
            await postgres_spool.put(conn, session_id, batch, chunks)

    async def _spool_get(self, session_id: str, after: int) -> list[Spooled]:
        async with self._conn() as conn:
            return await postgres_spool.get(conn, session_id, after)

    async def _spool_drop(self, session_id: str, through: int) -> None:
        async with self._conn() as conn:
            await postgres_spool.drop(conn, session_id, through)

    async def _read_header(self, session_id: str) -> SessionHeader:
        async with self._conn() as conn:
            return (await self._session(conn, session_id))[0]

    async def _exists_session(self, session_id: str) -> bool:
        async with self._conn() as conn:
            cur = await conn.execute(EXISTS, (session_id,))
            return await cur.fetchone() is not None

    async def _summaries(self, parent: str | None) -> list[SessionSummary]:
        async with self._conn() as conn:
            if parent is None:
                cur = await conn.execute(LIST_SESSIONS)
            else:
                cur = await conn.execute(LIST_CHILDREN, (parent,))
            rows = await cur.fetchall()
        return [summary_from_row(row, self.url) for row in rows]

    async def newest_sessions(self, count: int) -> list[SessionSummary]:
        """``ListsNewest``: the ``count`` newest sessions and their descendants, one query."""
        await self._enter()
        await self._settle(None)
        async with self._conn() as conn:
            rows = await (await conn.execute(NEWEST, (count,))).fetchall()
        return [summary_from_row(row, self.url) for row in rows]

    async def latest_top_level(self, cwd: str) -> str | None:
        """``FindsLatest``: the session ``--continue`` takes in ``cwd``, one query (the whole
        listing's rule instead when a candidate's events are all inherited)."""
        await self._enter()
        await self._settle(None)
        async with self._conn() as conn:
            row = await (await conn.execute(LATEST_TOP_LEVEL, (cwd,))).fetchone()
        if row is None or row[0]:
            return await latest_listed(self, cwd)
        return None if row[1] is None else str(row[1])

    async def newest_roots(self, count: int) -> tuple[int, list[SessionSummary]]:
        """``ListsNewest``: the session count, and the ``count`` newest top rows with their
        descendants (one snapshot: a repeatable-read transaction, two queries)."""
        await self._enter()
        await self._settle(None)
        async with self._conn() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            counted = await (await conn.execute(COUNT_SESSIONS)).fetchone()
            rows = await (await conn.execute(NEWEST_ROOTS, (count,))).fetchall()
        return (0 if counted is None else int(counted[0])), [summary_from_row(row, self.url) for row in rows]

    async def _fork_child(self, parent_id: str, options: ForkOptions) -> SessionSummary:
        async with self._conn() as conn, conn.transaction():
            cur = await conn.execute(SESSION, (parent_id,))
            row = await cur.fetchone()
            if row is None:
                raise SessionNotFoundError(parent_id, self.url)
            parent, _ = self._header(row)
            n = await self._cut(conn, parent_id, row[9], options.at)
            plan = fork_plan(parent, n, options)
            header = plan.header
            cur = await conn.execute(INSERT_SESSION, header_params(header, n, n + 1 if n else 0))
            if await cur.fetchone() is None:
                raise SessionExistsError(header.id, self.url)
            if plan.marker is not None:
                if not self._has_refs:
                    await conn.execute(LOCK_SCHEMA, (ADVISORY_LOCK,))  # one creator of the side table
                    await conn.execute(POSTGRES_CREATE)
                    await conn.execute(INDEX)
                    self._has_refs = True
                await conn.execute(insert_sql("%s"), (header.id, parent_id, n))
                marker = event_row(plan.marker)
                await conn.execute(INSERT_EVENT, (header.id, *marker))
        return SessionSummary(header, n, n + 1 if n else 0)

    async def _referencing(self, ids: list[str]) -> list[str]:
        async with self._conn() as conn:
            cur = await conn.execute(HAS_REFS)
            row = await cur.fetchone()
            if row is None or not row[0]:
                return []
            cur = await conn.execute(REFERENCING, (ids,))
            return [str(r[0]) for r in await cur.fetchall()]

    async def _remove(self, ids: list[str]) -> None:
        """Delete the sessions in one transaction (refused while a session outside ``ids``
        still holds events of one of them by reference)."""
        async with self._conn() as conn, conn.transaction():
            cur = await conn.execute(HAS_REFS)
            row = await cur.fetchone()
            if row is not None and row[0]:
                cur = await conn.execute(REFERENCING, (ids,))
                outside = sorted({str(r[0]) for r in await cur.fetchall()} - set(ids))
                if outside:
                    raise ParentReferencedError(ids[-1], outside)
                await conn.execute("DELETE FROM fork_refs WHERE session_id = ANY(%s)", (ids,))
            await conn.execute("DELETE FROM events WHERE session_id = ANY(%s)", (ids,))
            cur = await conn.execute(HAS_EXTRAS)
            row = await cur.fetchone()
            if row is not None and row[0]:
                await conn.execute("DELETE FROM session_extras WHERE session_id = ANY(%s)", (ids,))
            await conn.execute("DELETE FROM sessions WHERE id = ANY(%s)", (ids,))
            await postgres_spool.drop_sessions(conn, ids)

    async def _shutdown(self) -> None:
        """Write buffered events, release the leases, then close the pool."""
        try:
            await self._buffer.close()
        finally:
            try:
                await self._leases.close()
            finally:
                await self._close_pool()

    async def _close_pool(self) -> None:
        async with self._open_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # -- live tailing ---------------------------------------------------------------------

    @asynccontextmanager
    async def listen(self, session_id: str) -> AsyncIterator[PostgresListener]:
        """Wake-ups for appends to ``session_id`` (``LISTEN`` on a dedicated connection).

        Used by :func:`dsh.store.tail.follow`; start listening *before* reading, so no
        append between the read and the wait is missed.
        """
        self._check_open()
        async with self.mapped_errors():
            await self._ready()
            conn = await self._connect()
        try:
            async with self.mapped_errors():
                await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            yield PostgresListener(self, conn, notify_payload(self._schema_name, session_id))
        finally:
            await conn.close()

"""The PostgreSQL layout of a dsh session database: tables, the version row, statements and rows.

- ``dsh_schema``: exactly one row ``(application 'dsh', version SCHEMA_VERSION)``. On
  connect it is checked; any other application or version is refused with a clear error
  (there is no migration). A pristine schema is stamped under an advisory lock, so any
  number of processes may open a new database at once.
- ``sessions``: one row per session, the header fields as columns, including
  ``is_seeded`` and ``inherited_event_count`` (the persisted cut), plus ``next_seq``: the
  stored next seq, the row every writer of the session updates (and so locks) in its
  append transaction.
- ``events``: keyed by ``(session_id, seq)``; ``type``, ``time`` and the canonical JSON
  *text* of ``data``/``surfaceOp``/``sourceEventSeqs`` (``text``, not ``jsonb``: jsonb
  reorders keys and renormalizes numbers, and a stored log must round-trip byte for byte).

The functions here are the only place that knows the SQL; the store maps psycopg errors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Final

import psycopg
from psycopg import sql

from dsh import jsonx
from dsh.errors import CorruptLogError, StoreNotFoundError, UnsupportedFormatError, UsageError
from dsh.events import Event, SessionHeader
from dsh.events.vocabulary import TURN_END
from dsh.store.base import LeaseHolder
from dsh.store.rows import RARE_ENVELOPE, event_columns

APPLICATION: Final = "dsh"
"""``dsh_schema.application`` of a dsh session database."""

SCHEMA_VERSION: Final = 1
"""``dsh_schema.version`` of the layout this module reads and writes."""

ADVISORY_LOCK: Final = 0x64736832
"""``pg_advisory_xact_lock`` key held while a pristine schema is stamped (ASCII ``dsh2``)."""

NOTIFY_CHANNEL: Final = "dsh_events"
"""Every append transaction notifies this channel with :func:`notify_payload`."""

DSH_TABLES: Final = ("dsh_schema", "sessions", "events")

DDL: Final = (
    """CREATE TABLE dsh_schema (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        application text NOT NULL,
        version integer NOT NULL
    )""",
    """CREATE TABLE sessions (
        id text PRIMARY KEY,
        created_at bigint NOT NULL,
        cwd text,
        parent_session text,
        origin text,
        delegation_depth bigint NOT NULL,
        agent_preset text,
        is_seeded boolean NOT NULL,
        inherited_event_count bigint NOT NULL CHECK (inherited_event_count >= 0),
        next_seq bigint NOT NULL CHECK (next_seq >= 0)
    )""",
    "CREATE INDEX sessions_by_parent ON sessions (parent_session) WHERE parent_session IS NOT NULL",
    """CREATE TABLE events (
        session_id text NOT NULL REFERENCES sessions (id),
        seq bigint NOT NULL CHECK (seq >= 0),
        type text NOT NULL,
        time bigint NOT NULL,
        data text NOT NULL,
        surface_op text,
        source_event_seqs text,
        ignorable boolean NOT NULL DEFAULT false,
        PRIMARY KEY (session_id, seq)
    )""",
    f"CREATE INDEX events_turn_ends ON events (session_id, seq) WHERE type = '{TURN_END}'",
)

EVENT_COLUMNS: Final = "session_id, seq, type, time, data, surface_op, source_event_seqs, ignorable"
HEADER_COLUMNS: Final = (
    "id, created_at, cwd, parent_session, origin, delegation_depth, agent_preset, "
    "is_seeded, inherited_event_count"
)
_UNNEST: Final = (  # binary parameters (%b): psycopg's text array dumper escapes JSON slowly
    "unnest(%(seq)b::bigint[], %(type)b::text[], %(time)b::bigint[], %(data)b::text[], "
    "%(surface_op)b::text[], %(source)b::text[], %(ignorable)b::boolean[]) "
    "AS r (seq, type, time, data, surface_op, source_event_seqs, ignorable)"
)
_FROM_UNNEST: Final = "r.seq, r.type, r.time, r.data, r.surface_op, r.source_event_seqs, r.ignorable"

APPEND: Final = f"""WITH bump AS (
        UPDATE sessions SET next_seq = %(end)s WHERE id = %(sid)s AND next_seq = %(first)s RETURNING id
    ), ins AS (
        INSERT INTO events ({EVENT_COLUMNS}) SELECT bump.id, {_FROM_UNNEST} FROM bump, {_UNNEST}
    )
    SELECT pg_notify(%(channel)s, %(payload)s) FROM bump"""
"""One statement (so one transaction) per batch: advance ``next_seq`` only if it still is the
batch's first seq (the row lock serializes writers of one session), insert the rows, notify.
No row back means another writer got there first (or the session does not exist)."""

CREATE: Final = f"""WITH s AS (
        INSERT INTO sessions ({HEADER_COLUMNS}, next_seq)
        VALUES (%(id)s, %(created_at)s, %(cwd)s, %(parent_session)s, %(origin)s, %(delegation_depth)s,
                %(agent_preset)s, %(is_seeded)s, %(cut)s, %(end)s)
        ON CONFLICT (id) DO NOTHING RETURNING id
    ), ins AS (
        INSERT INTO events ({EVENT_COLUMNS}) SELECT s.id, {_FROM_UNNEST} FROM s, {_UNNEST}
    )
    SELECT count(*) FROM s"""

SESSION: Final = f"SELECT {HEADER_COLUMNS}, next_seq FROM sessions WHERE id = %s"
NEXT_SEQ: Final = "SELECT next_seq FROM sessions WHERE id = %s"
EXISTS: Final = "SELECT 1 FROM sessions WHERE id = %s"
SELECT_EVENTS: Final = (  # no tail: PostgreSQL keeps every payload whole
    "SELECT seq, type, time, data, NULL, CASE WHEN source_event_seqs IS NULL AND NOT ignorable "
    f"THEN surface_op ELSE '{RARE_ENVELOPE}' || "
    "json_build_array(surface_op, source_event_seqs, ignorable)::text END "
    "FROM events WHERE session_id = %s AND seq >= %s AND seq < %s ORDER BY seq"
)
"""The rows (:data:`dsh.store.rows.EventRow`) of seqs ``[from, to)`` of one session."""
_ORDER: Final = ' ORDER BY created_at, id COLLATE "C"'
_LAST_TIME: Final = (
    "(SELECT e.time FROM events e WHERE e.session_id = sessions.id AND e.seq = sessions.next_seq - 1)"
)
LIST_SESSIONS: Final = f"SELECT {HEADER_COLUMNS}, next_seq, {_LAST_TIME} FROM sessions{_ORDER}"
LIST_CHILDREN: Final = (
    f"SELECT {HEADER_COLUMNS}, next_seq, {_LAST_TIME} FROM sessions WHERE parent_session = %s{_ORDER}"
)
_SHOWN: Final = (
    f"SELECT {HEADER_COLUMNS}, next_seq, {_LAST_TIME} FROM sessions "
    f"WHERE id IN (SELECT id FROM shown){_ORDER}"
)
NEWEST: Final = (
    "WITH RECURSIVE shown(id) AS ("
    '(SELECT id FROM sessions ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT %s) '
    f"UNION SELECT c.id FROM sessions c JOIN shown ON c.parent_session = shown.id) {_SHOWN}"
)
"""``ListsNewest.newest_sessions``: the newest N sessions and their descendants (``UNION``: cycle-safe)."""
NEWEST_ROOTS: Final = (
    "WITH RECURSIVE shown(id) AS ("
    "(SELECT s.id FROM sessions s WHERE s.parent_session IS NULL OR s.parent_session = s.id "
    "OR NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session) "
    'ORDER BY s.created_at DESC, s.id COLLATE "C" DESC LIMIT %s) '
    f"UNION SELECT c.id FROM sessions c JOIN shown ON c.parent_session = shown.id) {_SHOWN}"
)
"""``ListsNewest.newest_roots``: the newest N top rows — no parent, itself as parent, or a parent
not stored — and their descendants."""
COUNT_SESSIONS: Final = "SELECT COUNT(*) FROM sessions"
LATEST_TOP_LEVEL: Final = (
    f"WITH c AS (SELECT id, created_at, next_seq, {_LAST_TIME} AS last FROM sessions "
    "WHERE cwd = %s AND origin IS DISTINCT FROM 'subagent') "
    "SELECT (SELECT COUNT(*) FROM c WHERE next_seq > 0 AND last IS NULL), "
    "(SELECT id FROM c ORDER BY CASE WHEN next_seq = 0 THEN created_at ELSE last END DESC, "
    'created_at DESC, id COLLATE "C" DESC LIMIT 1)'
)
"""``FindsLatest``: how many sessions of the cwd that no agent started have events but no last
time of their own (all inherited: the listing's rule reads it, so the caller lists), and the one
``dsh.store.newest.latest_listed`` finds among them when none has."""

INSERT_SESSION: Final = f"""INSERT INTO sessions ({HEADER_COLUMNS}, next_seq)
    VALUES (%(id)s, %(created_at)s, %(cwd)s, %(parent_session)s, %(origin)s, %(delegation_depth)s,
            %(agent_preset)s, %(is_seeded)s, %(cut)s, %(end)s)
    ON CONFLICT (id) DO NOTHING RETURNING id"""
INSERT_EVENT: Final = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"

CREATE_EXTRAS: Final = """CREATE TABLE IF NOT EXISTS session_extras (
        session_id text PRIMARY KEY REFERENCES sessions (id),
        header text NOT NULL
    )"""
"""Unknown header fields of imported logs (a JSON object per session), created on first need
under :data:`ADVISORY_LOCK`: an older dsh ignores the table, so the schema version stays."""
INSERT_EXTRA: Final = "INSERT INTO session_extras (session_id, header) VALUES (%s, %s)"
SELECT_EXTRA: Final = "SELECT header FROM session_extras WHERE session_id = %s"
HAS_EXTRAS: Final = "SELECT to_regclass('session_extras') IS NOT NULL"
HAS_REFS: Final = "SELECT to_regclass('fork_refs') IS NOT NULL"
LAST_END_IN: Final = (
    f"SELECT max(seq) FROM events WHERE session_id = %s AND seq >= %s AND seq < %s AND type = '{TURN_END}'"
)
REFERENCING: Final = "SELECT session_id FROM fork_refs WHERE source = ANY(%s)"
LOCK_SCHEMA: Final = "SELECT pg_advisory_xact_lock(%s)"
CREATE_ATTACHMENTS: Final = """CREATE TABLE IF NOT EXISTS attachments (
        id text PRIMARY KEY,
        media_type text NOT NULL,
        data bytea NOT NULL
    )"""
"""Attachment bytes by ``sha256:<hex>`` id, created on first need under :data:`ADVISORY_LOCK`."""
INSERT_ATTACHMENT: Final = (
    "INSERT INTO attachments (id, media_type, data) VALUES (%s, %s, %s) ON CONFLICT (id) DO NOTHING"
)
SELECT_ATTACHMENT: Final = "SELECT media_type, data FROM attachments WHERE id = %s"
HAS_ATTACHMENTS: Final = "SELECT to_regclass('attachments') IS NOT NULL"

TRY_LEASE: Final = "SELECT pg_try_advisory_lock(%s)"
"""A session lease: a session-level advisory lock on the lease's own connection."""
UNLOCK_LEASE: Final = "SELECT pg_advisory_unlock(%s)"
LEASE_HOLDER: Final = """SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid"""
"""The ``application_name`` of the connection holding an advisory lock (key split in two halves)."""

_LEASE_APP: Final = "dsh lease"


def lease_key(schema: str, session_id: str) -> int:
    """The signed 64-bit advisory lock key of ``session_id`` in ``schema``."""
    digest = hashlib.blake2b(f"{schema}\0{session_id}".encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def lease_key_halves(key: int) -> tuple[int, int]:
    """``(classid, objid)`` as ``pg_locks`` shows a bigint advisory key."""
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


def lease_application_name(holder: LeaseHolder) -> str:
    """The lease connection's ``application_name``: the holder, readable by a refused writer.

    PostgreSQL keeps 63 bytes; the host comes last, so only a very long host name is cut.
    """
    name = f"{_LEASE_APP} {holder.pid} {holder.since} {holder.host}"
    return name.encode()[:63].decode(errors="ignore")


def parse_lease_application_name(name: str | None) -> LeaseHolder | None:
    """The holder recorded by :func:`lease_application_name`, or ``None``."""
    if not name or not name.startswith(_LEASE_APP + " "):
        return None
    parts = name[len(_LEASE_APP) + 1 :].split(" ", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return LeaseHolder(int(parts[0]), parts[2], int(parts[1]))


_PROBE: Final = """SELECT current_schema(), current_setting('server_encoding'),
    ARRAY(SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = current_schema() AND c.relname = ANY(%s))"""

Row = tuple[int, str, int, str, str | None, str | None, bool]
"""An ``events`` row without its session id: seq, type, time, data, surfaceOp, sourceEventSeqs, ignorable."""


def event_row(event: Event) -> Row:
    """The ``events`` row of one (envelope-checked) event; refuses non-lossless JSON."""
    data, surface_op, source = event_columns(event)
    return (event.seq, event.type, event.time, data.decode(), surface_op, source, event.ignorable)


def rows_params(rows: Sequence[Row]) -> dict[str, list[Any]]:
    """The column arrays ``unnest`` takes for ``rows`` (parameters of :data:`APPEND` and :data:`CREATE`)."""
    columns: list[list[Any]] = [[], [], [], [], [], [], []]
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    names = ("seq", "type", "time", "data", "surface_op", "source", "ignorable")
    return dict(zip(names, columns, strict=True))


def header_params(header: SessionHeader, cut: int, end: int) -> dict[str, Any]:
    """The ``sessions`` columns of ``header`` (with its cut and next seq) as named parameters."""
    return {
        "id": header.id,
        "created_at": header.created_at,
        "cwd": header.cwd,
        "parent_session": header.parent_session,
        "origin": header.origin,
        "delegation_depth": header.delegation_depth,
        "agent_preset": header.agent_preset,
        "is_seeded": header.is_seeded,
        "cut": cut,
        "end": end,
    }


def notify_payload(schema: str, session_id: str) -> str:
    """The payload an append to ``session_id`` in ``schema`` notifies (a JSON pair)."""
    return jsonx.dumps_unchecked([schema, session_id]).decode()


async def _probe(conn: psycopg.AsyncConnection[Any]) -> tuple[str | None, str, set[str]]:
    cur = await conn.execute(_PROBE, (list(DSH_TABLES),))
    row = await cur.fetchone()
    assert row is not None
    return row[0], row[1], set(row[2])


async def _check_version(conn: psycopg.AsyncConnection[Any], where: str, schema: str) -> None:
    cur = await conn.execute("SELECT application, version FROM dsh_schema")
    rows = await cur.fetchall()
    if len(rows) != 1 or rows[0][0] != APPLICATION:
        found = ", ".join(repr(r[0]) for r in rows) or "no row"
        raise UnsupportedFormatError(
            f"{where}: schema {schema} is not a dsh session database (dsh_schema holds {found}); "
            "choose another schema"
        )
    version = rows[0][1]
    if version > SCHEMA_VERSION:
        raise UnsupportedFormatError(
            f"{where}: session database schema version {version} is newer than this dsh reads "
            f"({SCHEMA_VERSION}) — upgrade dsh"
        )
    if version != SCHEMA_VERSION:
        raise UnsupportedFormatError(
            f"{where}: session database schema version {version} is not supported (this dsh reads "
            f"version {SCHEMA_VERSION}); there is no migration"
        )


async def set_search_path(conn: psycopg.AsyncConnection[Any], schema: str | None) -> None:
    """Point ``conn`` at ``schema`` (every statement of the store is unqualified)."""
    if schema is not None:
        await conn.execute("SELECT set_config('search_path', quote_ident(%s), false)", (schema,))


async def prepare_database(
    conn: psycopg.AsyncConnection[Any], where: str, schema: str | None, *, create: bool = True
) -> str:
    """Check the dsh tables behind ``conn`` (stamping a pristine schema); return the schema name.

    ``create=False`` (a read-only command) stamps nothing: no dsh tables is a
    :class:`~dsh.errors.StoreNotFoundError`.

    ``conn`` is in autocommit mode with its search path set. Refuses a non-UTF8 database,
    a schema holding same-named tables dsh did not create, and any other schema version.
    """
    current, encoding, found = await _probe(conn)
    if encoding != "UTF8":
        raise UnsupportedFormatError(
            f"{where}: the database encoding is {encoding}; dsh stores JSON text and needs a UTF8 database"
        )
    if not create and (current is None or "dsh_schema" not in found):
        raise StoreNotFoundError(f"no store at {where}: it holds no dsh tables (nothing was created)")
    if current is None or "dsh_schema" not in found:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_LOCK,))
            if schema is not None and current is None:
                await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            current, _, found = await _probe(conn)
            if current is None:
                raise UsageError(
                    f"{where}: no schema on the search_path exists to hold the dsh tables; "
                    "add ?schema=NAME to the store URL"
                )
            if "dsh_schema" not in found:
                if found:
                    names = ", ".join(sorted(found))
                    raise UnsupportedFormatError(
                        f"{where}: schema {current} already holds tables dsh did not create ({names}); "
                        "choose another schema with ?schema=NAME"
                    )
                for statement in DDL:
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO dsh_schema (application, version) VALUES (%s, %s)",
                    (APPLICATION, SCHEMA_VERSION),
                )
                found = set(DSH_TABLES)
    await _check_version(conn, where, current)
    if not set(DSH_TABLES) <= found:
        missing = ", ".join(sorted(set(DSH_TABLES) - found))
        raise CorruptLogError(f"{where}: the dsh schema {current} is incomplete (missing {missing})")
    return current

"""The SQLite layout of the session database: schema, ownership stamps, rows and transactions.

All functions here are blocking and run on the store's worker thread; sqlite3 errors are
mapped to dsh errors by the caller (:class:`~dsh.store.sqlite.SqliteEventStore`).
"""

from __future__ import annotations

import sqlite3
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Final

from dsh.errors import CorruptLogError, UnsupportedFormatError
from dsh.events import Event, SessionHeader
from dsh.events.deferred import OPAQUE_TYPES, split_tail
from dsh.events.vocabulary import TURN_END
from dsh.store.rows import RARE_ENVELOPE, event_columns

APPLICATION_ID: Final = 0x64736832
"""``PRAGMA application_id`` of a dsh session database (ASCII ``dsh2``)."""

SCHEMA_VERSION: Final = 4
"""``PRAGMA user_version`` of the schema this module reads and writes.

2: ``events.data`` holds the event's canonical JSON as TEXT, or zlib-compressed as a BLOB
when that is smaller (payloads of at least :data:`COMPRESS_MIN` bytes).
3: ``events.tail`` holds a settlement's deferred tail (``dsh.events.deferred``: its stream
and wire, the same TEXT-or-BLOB packing), ``data`` the rest; ``NULL`` when kept whole. A
version-2 database is migrated in place on open (one added column).
4: a run of consecutive stream chunks written together is one row (``dsh.store.chunk_runs``:
``run_first``, ``run_times``; ``NULL`` on every other row). A version-2 or -3 database is
migrated in place on open (added columns; its rows stay as they are)."""

MIGRATABLE: Final = frozenset({2, 3})
"""Older schema versions :func:`connect` upgrades in place."""

COMPRESS_MIN: Final = 1024
"""Event data this large or larger is stored zlib-compressed when that saves space."""

BUSY_TIMEOUT_S: Final = 5.0

SCHEMA: Final = (
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY NOT NULL,
        created_at INTEGER NOT NULL,
        cwd TEXT,
        parent_session TEXT,
        origin TEXT,
        delegation_depth INTEGER NOT NULL,
        agent_preset TEXT,
        is_seeded INTEGER NOT NULL CHECK (is_seeded IN (0, 1)),
        inherited_event_count INTEGER NOT NULL CHECK (inherited_event_count >= 0)
    ) STRICT""",
    "CREATE INDEX sessions_by_parent ON sessions (parent_session) WHERE parent_session IS NOT NULL",
    """CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions (id),
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        time INTEGER NOT NULL,
        data ANY NOT NULL CHECK (typeof(data) IN ('text', 'blob')),
        surface_op TEXT,
        source_event_seqs TEXT,
        ignorable INTEGER NOT NULL DEFAULT 0 CHECK (ignorable IN (0, 1)),
        tail ANY CHECK (tail IS NULL OR typeof(tail) IN ('text', 'blob')),
        run_first INTEGER CHECK (run_first IS NULL OR run_first < seq),
        run_times BLOB,
        PRIMARY KEY (session_id, seq)
    ) STRICT""",
    f"CREATE INDEX events_turn_ends ON events (session_id, seq) WHERE type = '{TURN_END}'",
    "CREATE INDEX events_runs ON events (session_id, seq) WHERE run_first IS NOT NULL",
)

MIGRATE_TO_3: Final = (
    "ALTER TABLE events ADD COLUMN tail ANY CHECK (tail IS NULL OR typeof(tail) IN ('text', 'blob'))",
)
MIGRATE_TO_4: Final = (
    "ALTER TABLE events ADD COLUMN run_first INTEGER CHECK (run_first IS NULL OR run_first < seq)",
    "ALTER TABLE events ADD COLUMN run_times BLOB",
    "CREATE INDEX events_runs ON events (session_id, seq) WHERE run_first IS NOT NULL",
)
EVENT_COLUMNS: Final = "session_id, seq, type, time, data, surface_op, source_event_seqs, ignorable, tail"
INSERT_EVENT: Final = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
INSERT_RUN: Final = (
    f"INSERT INTO events ({EVENT_COLUMNS}, run_first, run_times) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
"""A packed chunk run (``dsh.store.chunk_runs``)."""
HEADER_COLUMNS: Final = (
    "id, created_at, cwd, parent_session, origin, delegation_depth, agent_preset, "
    "is_seeded, inherited_event_count"
)
INSERT_SESSION: Final = f"INSERT INTO sessions ({HEADER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_NOT_A_RUN: Final = "(tail IS NOT NULL OR run_first IS NULL)"
"""Every row but a packed run's (a row with a tail is never one: its run columns, after the
tail in the row, are then not read, nor the stream's pages before them)."""
_ENVELOPE: Final = (
    "CASE WHEN source_event_seqs IS NULL AND ignorable = 0 THEN surface_op "
    f"ELSE '{RARE_ENVELOPE}' || json_array(surface_op, source_event_seqs, ignorable) END"
)
"""The ``envelope`` column of :data:`dsh.store.rows.EventRow`."""
SELECT_EVENTS_IN: Final = (
    f"SELECT seq, type, time, data, tail, {_ENVELOPE} FROM events "
    f"WHERE session_id = ? AND seq >= ? AND seq < ? AND {_NOT_A_RUN} ORDER BY seq"
)
"""The rows (:data:`dsh.store.rows.EventRow`) of seqs ``[from, to)`` of one session but the
packed runs' (:data:`SELECT_RUNS`)."""
SELECT_SURFACE_IN: Final = (
    f"SELECT seq, type, time, CASE WHEN type IN ({', '.join(repr(t) for t in sorted(OPAQUE_TYPES))}) "
    f"THEN NULL ELSE data END, tail IS NOT NULL, {_ENVELOPE} FROM events "
    f"WHERE session_id = ? AND seq >= ? AND seq < ? AND {_NOT_A_RUN} ORDER BY seq"
)
"""The same without the deferred bytes (``dsh.events.deferred``): ``load(streams=False)``."""
SELECT_RUNS: Final = (
    "SELECT seq, data, run_first, run_times FROM events INDEXED BY events_runs "
    "WHERE session_id = ? AND run_first IS NOT NULL AND seq >= ? AND seq < ? AND run_first < ? ORDER BY seq"
)
"""The packed runs (``dsh.store.chunk_runs``) holding seqs of ``[from, to)``: keyed by their last
seq, so from ``from`` to ``to`` + the longest run; read through their own (partial) index."""
SELECT_RUN_TIMES: Final = SELECT_RUNS.replace("SELECT seq, data,", "SELECT seq, NULL,")
"""The same without the chunks' data: a surface read."""
MAX_SEQ: Final = 2**63 - 1
"""An upper bound no seq reaches (a range "to the end")."""
LAST_END_IN: Final = (
    f"SELECT MAX(seq) FROM events WHERE session_id = ? AND seq >= ? AND seq < ? AND type = '{TURN_END}'"
)
HAS_REFS: Final = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'fork_refs'"
NEXT_SEQ: Final = "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session_id = ?"
SELECT_HEADER: Final = f"SELECT {HEADER_COLUMNS} FROM sessions WHERE id = ?"
_NEXT_SEQ_OF_S: Final = "(SELECT COALESCE(MAX(e.seq) + 1, 0) FROM events e WHERE e.session_id = s.id)"
""":data:`NEXT_SEQ` of the ``sessions`` row ``s``, as a column."""
HEADER_NEXT_SEQ: Final = f"SELECT {HEADER_COLUMNS}, {_NEXT_SEQ_OF_S} FROM sessions s WHERE s.id = ?"
"""A session's header columns, then its :data:`NEXT_SEQ` (one statement: a tail read's)."""
SUMMARY: Final = (
    f"SELECT {HEADER_COLUMNS}, {_NEXT_SEQ_OF_S}, "
    "(SELECT e.time FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1) FROM sessions s"
)
NEWEST: Final = (
    "WITH RECURSIVE shown(id) AS ("
    "SELECT id FROM (SELECT id FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?) "
    "UNION SELECT c.id FROM sessions c JOIN shown ON c.parent_session = shown.id) "
    f"{SUMMARY} WHERE s.id IN shown ORDER BY s.created_at, s.id"
)
"""``ListsNewest``: the newest N sessions and their descendants (``UNION``: each once, cycle-safe)."""
NEWEST_ROOTS: Final = (
    "WITH RECURSIVE shown(id) AS ("
    "SELECT id FROM (SELECT s.id FROM sessions s WHERE s.parent_session IS NULL OR s.parent_session = s.id "
    "OR NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session) "
    "ORDER BY s.created_at DESC, s.id DESC LIMIT ?) "
    "UNION SELECT c.id FROM sessions c JOIN shown ON c.parent_session = shown.id) "
    f"{SUMMARY} WHERE s.id IN shown ORDER BY s.created_at, s.id"
)
"""``ListsNewest.newest_roots``: the newest N top rows — no parent, itself as parent, or a parent
not stored — and their descendants."""
COUNT_SESSIONS: Final = "SELECT COUNT(*) FROM sessions"
LATEST_TOP_LEVEL: Final = (
    "SELECT s.id FROM sessions s WHERE s.cwd = ? AND s.origin IS NOT 'subagent' ORDER BY COALESCE("
    "(SELECT e.time FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1), s.created_at"
    ") DESC, s.created_at DESC, s.id DESC LIMIT 1"
)
"""``FindsLatest``: :data:`SUMMARY`'s last event time (the creation time when the session has no
row) ranks the sessions of a cwd that no agent started, as ``dsh.store.newest.latest_listed``."""

EXTRAS_TABLE: Final = "session_extras"
CREATE_EXTRAS: Final = f"""CREATE TABLE IF NOT EXISTS {EXTRAS_TABLE} (
        session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id),
        header TEXT NOT NULL
    ) STRICT"""
"""Unknown header fields of imported logs (a JSON object per session), created on first need:
an older dsh ignores the table, so the schema version stays the same."""
INSERT_EXTRA: Final = f"INSERT INTO {EXTRAS_TABLE} (session_id, header) VALUES (?, ?)"
SELECT_EXTRA: Final = f"SELECT header FROM {EXTRAS_TABLE} WHERE session_id = ?"
HAS_EXTRAS: Final = f"SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '{EXTRAS_TABLE}'"

DIGESTS_TABLE: Final = "session_digests"
CREATE_DIGESTS: Final = f"""CREATE TABLE IF NOT EXISTS {DIGESTS_TABLE} (
        session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id),
        event_count INTEGER NOT NULL,
        digest TEXT NOT NULL
    ) STRICT"""
"""What listings derived from a session's events (``KeepsDigests``), created on first need."""
HAS_DIGESTS: Final = f"SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '{DIGESTS_TABLE}'"
KEEP_DIGEST: Final = (
    f"INSERT OR REPLACE INTO {DIGESTS_TABLE} (session_id, event_count, digest) "
    "SELECT id, ?, ? FROM sessions WHERE id = ?"
)

CREATE_ATTACHMENTS: Final = """CREATE TABLE IF NOT EXISTS attachments (
        id TEXT PRIMARY KEY NOT NULL,
        media_type TEXT NOT NULL,
        data BLOB NOT NULL
    ) STRICT"""
"""Attachment bytes by ``sha256:<hex>`` id, created on first need (like the extras table)."""
INSERT_ATTACHMENT: Final = "INSERT OR IGNORE INTO attachments (id, media_type, data) VALUES (?, ?, ?)"
SELECT_ATTACHMENT: Final = "SELECT media_type, data FROM attachments WHERE id = ?"
HAS_ATTACHMENTS: Final = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'attachments'"

Row = tuple[str, int, str, int, str | bytes, str | None, str | None, int, str | bytes | None]


def pack_data(encoded: bytes) -> str | bytes:
    """The ``data`` column value: the JSON text, or its zlib compression when smaller."""
    if len(encoded) >= COMPRESS_MIN:
        packed = zlib.compress(encoded, 1)
        if len(packed) < len(encoded):
            return packed
    return encoded.decode()


def unpack_data(value: str | bytes) -> str | bytes:
    """The JSON of a ``data`` column value of an event kept whole (inflating a compressed BLOB)."""
    return zlib.decompress(value) if isinstance(value, bytes) else value


def event_row(session_id: str, event: Event) -> Row:
    """The ``events`` row of one (envelope-checked) event; refuses non-lossless JSON."""
    data, surface_op, source = event_columns(event)
    split = split_tail(event.type, event.data, data)
    head, tail = (data, None) if split is None else split
    return (
        session_id,
        event.seq,
        event.type,
        event.time,
        pack_data(head),
        surface_op,
        source,
        int(event.ignorable),
        None if tail is None else pack_data(tail),
    )


def session_row(header: SessionHeader, cut: int) -> tuple[Any, ...]:
    return (
        header.id,
        header.created_at,
        header.cwd,
        header.parent_session,
        header.origin,
        header.delegation_depth,
        header.agent_preset,
        int(header.is_seeded),
        cut,
    )


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on error)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction, so multi-statement reads see one consistent state."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def _owner(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """The stamp and object count, read in one transaction: another process stamping the file
    meanwhile is seen whole or not at all (three separate reads could mix before and after)."""
    with snapshot(conn) if not conn.in_transaction else nullcontext():
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        objects = conn.execute(
            "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'"
        ).fetchone()[0]
    return app_id, version, objects


def check_owner(path: Path, app_id: int, version: int, objects: int) -> bool:
    """True when the database is pristine (ours to stamp); raise when it is not ours."""
    if version == 0:
        if app_id != 0 or objects:
            raise UnsupportedFormatError(
                f"{path} is not a dsh session database (it holds data without a dsh "
                "version stamp); choose another file"
            )
        return True
    if app_id != APPLICATION_ID:
        raise UnsupportedFormatError(
            f"{path} is not a dsh session database (application_id {app_id:#x}, "
            f"dsh uses {APPLICATION_ID:#x}); choose another file"
        )
    if version > SCHEMA_VERSION:
        raise UnsupportedFormatError(
            f"{path}: session database schema version {version} is newer than this dsh "
            f"reads ({SCHEMA_VERSION}) — upgrade dsh"
        )
    if version != SCHEMA_VERSION and version not in MIGRATABLE:
        raise UnsupportedFormatError(
            f"{path}: session database schema version {version} is not supported "
            f"(this dsh reads version {SCHEMA_VERSION}); there is no migration"
        )
    return False


def _wal(conn: sqlite3.Connection) -> None:
    """Put the database in WAL mode (it stays so). SQLite refuses the switch at once, without
    its busy wait, while another connection is in the middle of it or of stamping a new file:
    then look again until :data:`BUSY_TIMEOUT_S` (the other one usually did it)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            time.sleep(0.01)


def _migrate(conn: sqlite3.Connection) -> None:
    """Upgrade a version-2 or -3 database in place (one transaction; another process may race us)."""
    if conn.execute("PRAGMA user_version").fetchone()[0] not in MIGRATABLE:
        return
    with immediate(conn):
        if conn.execute("PRAGMA user_version").fetchone()[0] in MIGRATABLE:
            if conn.execute("PRAGMA user_version").fetchone()[0] == 2:
                for statement in MIGRATE_TO_3:
                    conn.execute(statement)
            for statement in MIGRATE_TO_4:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def connect(path: Path) -> sqlite3.Connection:
    """Open ``path``, refuse it unless it is ours, stamp it when pristine, set the pragmas."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    try:
        if check_owner(path, *_owner(conn)):
            with immediate(conn):
                if check_owner(path, *_owner(conn)):
                    for statement in SCHEMA:
                        conn.execute(statement)
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        _migrate(conn)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        if not {"sessions", "events"} <= tables:
            raise CorruptLogError(f"{path}: the dsh schema is incomplete (missing tables)")
        _wal(conn)
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn

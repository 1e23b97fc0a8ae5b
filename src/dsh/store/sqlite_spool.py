"""The SQLite store's live spool (``dsh.store.spool``): one side table, created on first need.

An older dsh ignores the table (the schema version stays the same). The cursor is SQLite's
``AUTOINCREMENT`` row id: it only grows, also across deletes, so a reader's cursor stays valid.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from dsh.store.spool import SpoolBatch, Spooled, spooled_row
from dsh.store.sqlite_schema import immediate

SPOOL_TABLE: Final = "live_spool"
CREATE_SPOOL: Final = (
    f"CREATE TABLE IF NOT EXISTS {SPOOL_TABLE} ("
    "cursor INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, stream TEXT NOT NULL, "
    "at INTEGER NOT NULL, first INTEGER NOT NULL, chunks TEXT NOT NULL) STRICT"
)
INDEX_SPOOL: Final = f"CREATE INDEX IF NOT EXISTS {SPOOL_TABLE}_session ON {SPOOL_TABLE} (session_id, cursor)"
HAS_SPOOL: Final = f"SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '{SPOOL_TABLE}'"


def put_sync(conn: sqlite3.Connection, session_id: str, batch: SpoolBatch, chunks: bytes) -> None:
    with immediate(conn):
        conn.execute(CREATE_SPOOL)
        conn.execute(INDEX_SPOOL)
        conn.execute(
            f"INSERT INTO {SPOOL_TABLE} (session_id, stream, at, first, chunks) VALUES (?, ?, ?, ?, ?)",
            (session_id, batch.stream, batch.at, batch.first, chunks.decode()),
        )


def get_sync(conn: sqlite3.Connection, session_id: str, after: int) -> list[Spooled]:
    if conn.execute(HAS_SPOOL).fetchone() is None:
        return []
    rows = conn.execute(
        f"SELECT cursor, stream, at, first, chunks FROM {SPOOL_TABLE} "
        "WHERE session_id = ? AND cursor > ? ORDER BY cursor",
        (session_id, after),
    ).fetchall()
    return [s for s in (spooled_row(*row) for row in rows) if s is not None]


def drop_sync(conn: sqlite3.Connection, session_id: str, through: int) -> None:
    if conn.execute(HAS_SPOOL).fetchone() is None:
        return
    with immediate(conn):
        conn.execute(f"DELETE FROM {SPOOL_TABLE} WHERE session_id = ? AND at <= ?", (session_id, through))


def drop_sessions(conn: sqlite3.Connection, session_ids: list[str]) -> None:
    """Inside a deletion's transaction: the deleted sessions' batches."""
    if conn.execute(HAS_SPOOL).fetchone() is not None:
        for sid in session_ids:
            conn.execute(f"DELETE FROM {SPOOL_TABLE} WHERE session_id = ?", (sid,))

"""The PostgreSQL store's live spool (``dsh.store.spool``): one side table, created on first need.

Created under the schema's advisory lock (one creator among many workers); an older dsh
ignores it, so the schema version stays. The cursor is a ``bigserial``: a batch committed
after a later-numbered one (two writers of one session at once, a lost worker's last
batch) can be passed over by a reader — harmless, the settlement carries every delta.
"""

from __future__ import annotations

from typing import Final

import psycopg
from psycopg.rows import TupleRow

from dsh.store.postgres_schema import ADVISORY_LOCK, LOCK_SCHEMA
from dsh.store.spool import SpoolBatch, Spooled, spooled_row

Conn = psycopg.AsyncConnection[TupleRow]

CREATE_SPOOL: Final = (
    "CREATE TABLE IF NOT EXISTS live_spool (cursor bigserial PRIMARY KEY, session_id text NOT NULL, "
    "stream text NOT NULL, at bigint NOT NULL, first integer NOT NULL, chunks text NOT NULL)"
)
INDEX_SPOOL: Final = "CREATE INDEX IF NOT EXISTS live_spool_session ON live_spool (session_id, cursor)"
HAS_SPOOL: Final = "SELECT to_regclass('live_spool') IS NOT NULL"


async def has_spool(conn: Conn) -> bool:
    cur = await conn.execute(HAS_SPOOL)
    row = await cur.fetchone()
    return row is not None and bool(row[0])


async def create(conn: Conn) -> None:
    """Create the table unless it exists (in a transaction of its own)."""
    async with conn.transaction():
        await conn.execute(LOCK_SCHEMA, (ADVISORY_LOCK,))
        await conn.execute(CREATE_SPOOL)
        await conn.execute(INDEX_SPOOL)


async def put(conn: Conn, session_id: str, batch: SpoolBatch, chunks: bytes) -> None:
    await conn.execute(
        "INSERT INTO live_spool (session_id, stream, at, first, chunks) VALUES (%s, %s, %s, %s, %s)",
        (session_id, batch.stream, batch.at, batch.first, chunks.decode()),
    )


async def get(conn: Conn, session_id: str, after: int) -> list[Spooled]:
    if not await has_spool(conn):
        return []
    cur = await conn.execute(
        "SELECT cursor, stream, at, first, chunks FROM live_spool "
        "WHERE session_id = %s AND cursor > %s ORDER BY cursor",
        (session_id, after),
    )
    rows = await cur.fetchall()
    return [s for s in (spooled_row(*row) for row in rows) if s is not None]


async def drop(conn: Conn, session_id: str, through: int) -> None:
    if await has_spool(conn):
        await conn.execute("DELETE FROM live_spool WHERE session_id = %s AND at <= %s", (session_id, through))


async def drop_sessions(conn: Conn, session_ids: list[str]) -> None:
    """Inside a deletion's transaction: the deleted sessions' batches."""
    if await has_spool(conn):
        await conn.execute("DELETE FROM live_spool WHERE session_id = ANY(%s)", (session_ids,))

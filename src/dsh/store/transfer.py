"""Import and export: a log file (version 0 or 2) into a store, a stored session out as version 2."""

from __future__ import annotations

import os

from dsh.errors import SessionExistsError
from dsh.store.base import EventStore, LoadedSession
from dsh.store.logfile import encode_log, read_log_file, write_log_file


async def import_log(store: EventStore, path: str | os.PathLike[str]) -> LoadedSession:
    """Store the session recorded in ``path`` under its recorded id; return it as stored.

    Every event keeps its seq, type and data (packed rows expanded), so the cut never
    moves; a version-0 fork child's ``session/end-seed`` becomes the tagged marker. Header
    fields dsh does not know are kept. A session id already in the store is refused.
    """
    decoded = await read_log_file(path)
    session = decoded.for_import()
    if await store.exists(session.header.id):
        raise SessionExistsError(session.header.id, f"the store (not importing {os.fspath(path)})")
    await store.create_batch([session])  # keeps unknown header fields (create has no place for them)
    return session


async def export_session(store: EventStore, session_id: str) -> bytes:
    """A self-contained version-2 JSONL log of one stored session (inherited prefix included)."""
    return encode_log(await store.load(session_id))


async def export_session_file(store: EventStore, session_id: str, path: str | os.PathLike[str]) -> None:
    """Write one stored session to ``path`` as version 2 (``.zst`` names are compressed)."""
    await write_log_file(path, await store.load(session_id))

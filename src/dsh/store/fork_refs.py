"""Forks by reference in the row stores: the ``fork_refs`` side table and the one resolving read.

A fork child in SQLite or PostgreSQL holds no copy of its parent's prefix: a ``fork_refs``
row ``(session_id, source, cut)`` says that its events below ``cut`` are ``source``'s
(themselves resolved the same way: a fork of a fork), and its own rows start at ``cut`` with
the tagged marker. Every read of a session's events goes through :func:`segments`, which
turns the reference chain into the ``(session, from seq, to seq)`` row ranges whose
concatenation is the materialized log — byte-identical to a copied one. The table is created
by the first fork that needs it (an older database keeps opening; nothing is migrated), and
the count of a session's events, its next seq, are its own rows' (the marker is its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from dsh.errors import CorruptLogError

TABLE: Final = "fork_refs"

SQLITE_CREATE: Final = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id),
        source TEXT NOT NULL REFERENCES sessions (id),
        cut INTEGER NOT NULL CHECK (cut > 0)
    ) STRICT"""
POSTGRES_CREATE: Final = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        session_id text PRIMARY KEY REFERENCES sessions (id),
        source text NOT NULL REFERENCES sessions (id),
        cut bigint NOT NULL CHECK (cut > 0)
    )"""
INDEX: Final = f"CREATE INDEX IF NOT EXISTS {TABLE}_by_source ON {TABLE} (source)"


def chain_sql(param: str) -> str:
    """The reference chain of one session (``param``: the driver's placeholder), cycle-safe."""
    return f"""WITH RECURSIVE chain(session_id, source, cut) AS (
        SELECT session_id, source, cut FROM {TABLE} WHERE session_id = {param}
        UNION
        SELECT r.session_id, r.source, r.cut FROM {TABLE} r JOIN chain c ON r.session_id = c.source
    ) SELECT session_id, source, cut FROM chain"""


def insert_sql(param: str) -> str:
    """One reference row (``session_id, source, cut``)."""
    return f"INSERT INTO {TABLE} (session_id, source, cut) VALUES ({param}, {param}, {param})"


@dataclass(frozen=True, slots=True)
class Segment:
    """Rows ``start <= seq < end`` of ``session_id`` (``end`` ``None``: to its last row)."""

    session_id: str
    start: int
    end: int | None


def segments(session_id: str, chain: Iterable[Sequence[object]], start: int = 0) -> list[Segment]:
    """The row ranges whose concatenation is ``session_id``'s log from seq ``start`` on.

    ``chain``: the ``(session_id, source, cut)`` rows of its references (:func:`chain_sql`);
    none: the session's own rows. A chain that loops is ``CorruptLogError``.
    """
    refs = {str(sid): (str(source), int(str(cut))) for sid, source, cut in chain}
    out: list[Segment] = []
    hi: int | None = None
    current = session_id
    seen: set[str] = set()
    while True:
        if current in seen:
            raise CorruptLogError(f"session {session_id}: its fork references loop at {current}")
        seen.add(current)
        ref = refs.get(current)
        own = ref[1] if ref is not None else 0
        lo = max(own, start)
        if hi is None or lo < hi:
            out.append(Segment(current, lo, hi))
        if ref is None:
            break
        hi = own if hi is None else min(hi, own)
        if hi <= start:
            break
        current = ref[0]
    out.reverse()
    return out

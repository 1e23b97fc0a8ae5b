"""The live spool: a model call's text and reasoning deltas, kept a moment for a reader elsewhere.

A worker running a model step (``dsh.temporal``) writes the step's deltas here in batches
while the call streams; ``dsh run --temporal`` in another process reads them and prints them
before the step's settlement is logged. The spool is not the log: its rows are not events,
are never exported or replayed, and are dropped once the call they belong to is settled
(:meth:`SpoolingStore.unspool`) and with their session. Stale rows (a worker died before
dropping them) are harmless: a reader ignores a stream whose settlement it has seen.

Optional capability (like ``ListeningStore`` in ``dsh.store.tail``): every built-in store
implements :class:`SpoolingStore`; a store without it simply streams nothing live. One
rule here for every backend: what a batch may hold (:func:`encode_chunks` /
:func:`decode_chunks`): a row that does not decode is skipped, never an error (it is display
data; the settlement carries the same deltas).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import orjson

from dsh import jsonx
from dsh.errors import InvalidEventError
from dsh.events.chunks import Chunk

SPOOLED_TYPES = frozenset({"text-delta", "reasoning-delta"})
"""The chunk types a spool carries (what a reader prints)."""


@dataclass(frozen=True, slots=True)
class SpoolBatch:
    """Consecutive deltas of one model call's stream."""

    stream: str
    """The stream's id: one per model call attempt (a retried step streams under a new one)."""
    at: int
    """The session's next seq when the stream began: the call's settlement is logged at or after it."""
    first: int
    """The index of ``chunks[0]`` among the stream's spooled deltas."""
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True, slots=True)
class Spooled:
    """A stored batch and its cursor (increasing in writing order, per store)."""

    cursor: int
    batch: SpoolBatch


@runtime_checkable
class SpoolingStore(Protocol):
    """The optional capability of a store that keeps live stream deltas for other processes."""

    async def spool(self, session_id: str, batch: SpoolBatch) -> None:
        """Keep ``batch`` for readers of ``session_id`` (the session need not exist)."""
        ...

    async def spooled(self, session_id: str, after: int = 0) -> list[Spooled]:
        """The session's kept batches with a cursor above ``after``, in writing order."""
        ...

    async def unspool(self, session_id: str, through: int) -> None:
        """Drop the session's batches whose stream began at or before seq ``through``."""
        ...


def encode_chunks(chunks: Sequence[Chunk]) -> bytes:
    """A batch's deltas as JSON (only :data:`SPOOLED_TYPES`; others are a caller's bug)."""
    if any(c["type"] not in SPOOLED_TYPES for c in chunks):
        raise InvalidEventError("the live spool keeps text and reasoning deltas only")
    return jsonx.encode_checked(list(chunks), "spooled deltas")


def decode_chunks(raw: str | bytes) -> tuple[Chunk, ...] | None:
    """The deltas of a stored batch, ``None`` when they are not a list of deltas."""
    try:
        value: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return chunks_of(value)


def chunks_of(value: object) -> tuple[Chunk, ...] | None:
    """:func:`decode_chunks` of a batch already parsed (a JSONL spool line holds it parsed)."""
    if not isinstance(value, list):
        return None
    for chunk in value:
        if not (
            isinstance(chunk, dict)
            and chunk.get("type") in SPOOLED_TYPES
            and isinstance(chunk.get("text"), str)
            and isinstance(chunk.get("index"), int)
        ):
            return None
    return tuple(value)


def spooled_row(
    cursor: int, stream: object, at: object, first: object, chunks: str | bytes
) -> Spooled | None:
    """A backend's stored row as a :class:`Spooled` (``None``: a row that does not decode)."""
    return spooled_batch(cursor, stream, at, first, decode_chunks(chunks))


def spooled_batch(
    cursor: int, stream: object, at: object, first: object, decoded: tuple[Chunk, ...] | None
) -> Spooled | None:
    """:func:`spooled_row` of a row whose deltas are decoded (:func:`chunks_of`)."""
    if decoded is None or not isinstance(stream, str):
        return None
    if not isinstance(at, int) or not isinstance(first, int) or at < 0 or first < 0:
        return None
    return Spooled(cursor, SpoolBatch(stream, at, first, decoded))


class MemorySpool:
    """The in-process spool a ``MemorySpace`` holds (every handle of the space shares it)."""

    __slots__ = ("_next", "_rows")

    def __init__(self) -> None:
        self._rows: dict[str, list[Spooled]] = {}
        self._next = 1

    def spool(self, session_id: str, batch: SpoolBatch) -> None:
        self._rows.setdefault(session_id, []).append(Spooled(self._next, batch))
        self._next += 1

    def spooled(self, session_id: str, after: int) -> list[Spooled]:
        return [row for row in self._rows.get(session_id, ()) if row.cursor > after]

    def unspool(self, session_id: str, through: int) -> None:
        kept = [row for row in self._rows.get(session_id, ()) if row.batch.at > through]
        if kept:
            self._rows[session_id] = kept
        else:
            self._rows.pop(session_id, None)

    def drop(self, session_ids: Sequence[str]) -> None:
        """Forget deleted sessions' batches."""
        for sid in session_ids:
            self._rows.pop(sid, None)

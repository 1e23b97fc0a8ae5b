"""Buffered appends for row stores: one per-session tail of rows written in transactions.

SQLite and PostgreSQL both keep, per session, the next seq and the rows of non-durable
appends not yet written; a durable append (or any read, or ``close``) writes them in one
transaction. The store supplies how to read the stored next seq, how to turn an event into a
row and how to insert a batch; this module owns the bookkeeping around them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from dsh.events import Event
from dsh.store.rules import check_append

RowT = TypeVar("RowT")


@dataclass(slots=True, eq=False)
class _Tail(Generic[RowT]):
    """The in-process append state of one session (touched only while ``lock`` is held)."""

    next_seq: int
    """Next seq, buffered rows included."""
    pending: list[RowT] = field(default_factory=list)
    stale: bool = False
    """Set after a failed write: ``next_seq`` must be re-read from the database."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class AppendBuffer(Generic[RowT]):
    """Per-session buffered appends over ``next_seq``, ``to_row`` and ``insert``.

    ``insert(session_id, rows)`` writes one batch in one transaction and raises
    ``SeqConflictError`` when the database is not at the batch's first seq.
    """

    def __init__(
        self,
        *,
        next_seq: Callable[[str], Awaitable[int]],
        to_row: Callable[[str, Event], RowT],
        insert: Callable[[str, list[RowT]], Awaitable[None]],
    ) -> None:
        self._next_seq = next_seq
        self._to_row = to_row
        self._insert = insert
        self._tails: dict[str, _Tail[RowT]] = {}
        self._lock = asyncio.Lock()

    async def _tail(self, session_id: str) -> _Tail[RowT]:
        tail = self._tails.get(session_id)
        if tail is not None:
            return tail
        async with self._lock:
            tail = self._tails.get(session_id)
            if tail is None:
                tail = _Tail(await self._next_seq(session_id))
                self._tails[session_id] = tail
            return tail

    async def _flush(self, session_id: str, tail: _Tail[RowT]) -> None:
        """Write ``tail``'s buffered rows in one transaction; caller holds ``tail.lock``."""
        if not tail.pending:
            return
        rows = tail.pending
        tail.pending = []
        try:
            await self._insert(session_id, rows)
        except BaseException:
            tail.stale = True
            raise

    async def append(
        self,
        session_id: str,
        events: Sequence[Event],
        *,
        durable: bool,
        check_open: Callable[[], None],
    ) -> None:
        """Buffer ``events`` (checked against the next seq); write them now when ``durable``."""
        tail = await self._tail(session_id)
        async with tail.lock:
            check_open()
            first = events[0].seq if events else tail.next_seq
            if tail.stale or (first != tail.next_seq and not tail.pending):
                # Another writer (process) may have appended since we cached the next seq.
                tail.next_seq = await self._next_seq(session_id)
                tail.stale = False
            check_append(session_id, events, tail.next_seq)
            rows = [self._to_row(session_id, e) for e in events]
            tail.pending.extend(rows)
            tail.next_seq += len(rows)
            if durable:
                await self._flush(session_id, tail)

    async def flush(self, session_id: str) -> None:
        """Write ``session_id``'s buffered rows, so a read sees them."""
        tail = self._tails.get(session_id)
        if tail is not None and tail.pending:
            async with tail.lock:
                await self._flush(session_id, tail)

    async def flush_all(self) -> None:
        for session_id in list(self._tails):
            await self.flush(session_id)

    async def close(self) -> None:
        """Write every session's buffered rows; the first failure is raised after trying all."""
        first_error: BaseException | None = None
        for session_id, tail in list(self._tails.items()):
            async with tail.lock:
                try:
                    await self._flush(session_id, tail)
                except Exception as exc:  # keep writing the other sessions
                    first_error = first_error or exc
        self._tails.clear()
        if first_error is not None:
            raise first_error

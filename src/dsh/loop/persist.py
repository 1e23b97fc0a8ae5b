"""Checkpoints: pushing a session's unpersisted events to its store, durably."""

from __future__ import annotations

import asyncio

from dsh.session import Session
from dsh.store import EventStore


class Persister:
    """Tracks how much of a session's log is in the store and flushes the rest.

    The loop appends to the in-memory session freely and calls :meth:`flush` at the
    checkpoints the format requires (before a model request, before a tool runs, at every
    ``turn/end``), so a crash loses at most the settlement in flight.
    """

    __slots__ = ("_lock", "_persisted", "session", "store")

    def __init__(self, store: EventStore, session: Session, persisted: int) -> None:
        self.store = store
        self.session = session
        self._persisted = persisted
        self._lock = asyncio.Lock()

    @property
    def pending(self) -> int:
        return self.session.next_seq - self._persisted

    async def flush(self, *, durable: bool = True) -> None:
        """Append every event not yet in the store; ``durable`` waits for stable storage."""
        async with self._lock:
            events = self.session.events
            end = len(events)
            if end == self._persisted:
                return
            await self.store.append(self.session.id, events[self._persisted : end], durable=durable)
            self._persisted = end

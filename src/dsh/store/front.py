"""``StoreFront``: the ``EventStore`` methods, written once; backends supply the storage.

Every rule a store applies before or around touching storage lives here or in what this
calls (:mod:`dsh.store.rules` for what ``create`` / ``append`` accept, ``dsh.events.fork``
for what a fork child holds, :mod:`dsh.store.deletion` for ``delete``): refusing use after
``close``, the seed and batch checks, the ``read_from`` seq check, writing buffered events
before a read, the fork options, the lease, and an idempotent ``close``. A backend (memory,
JSONL, SQLite, PostgreSQL) implements only the underscored storage primitives below (and
``append``, whose next seq each keeps its own way; :class:`BufferedFront` for the row stores).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh.errors import InvalidEventError
from dsh.events import Event, SessionHeader
from dsh.events.fork import ForkOptions
from dsh.store.base import ClosingStore, LoadedSession, SessionLease, SessionSummary
from dsh.store.buffer import AppendBuffer
from dsh.store.deletion import delete_tree
from dsh.store.lease import LeaseTable
from dsh.store.rules import check_batch, check_seed


def check_read_seq(session_id: str, seq: int) -> None:
    """Refuse a negative ``read_from`` seq."""
    if seq < 0:
        raise InvalidEventError(f"session {session_id}: read_from needs a non-negative seq, got {seq}")


class StoreFront(ClosingStore):
    """The shared half of every backend: checks, ordering and the public signatures."""

    _closed: bool
    _leases: LeaseTable[Any]

    # -- what a backend provides ----------------------------------------------------------

    @property
    def where(self) -> str:
        """The store as error messages name it (a path, a URL, ``the memory store``)."""
        raise NotImplementedError

    def _check_open(self) -> None:
        """Raise ``StoreClosedError`` (naming the store) once the store is closed."""
        raise NotImplementedError

    async def _enter(self) -> None:
        """Called first by every operation: refuse a closed store (and any first-use setup)."""
        self._check_open()

    async def _settle(self, session_id: str | None) -> None:
        """Write the buffered events of ``session_id`` (every session: ``None``) before a read."""

    async def _store_one(self, header: SessionHeader, seed: Sequence[Event], cut: int) -> None:
        """Store one checked new session (``SessionExistsError`` for a stored id)."""
        raise NotImplementedError

    async def _store_many(self, sessions: Sequence[LoadedSession], extras: Sequence[bytes | None]) -> None:
        """Store checked new sessions (``extras``: each one's extra header fields as JSON), all or none."""
        raise NotImplementedError

    async def append(self, session_id: str, events: Sequence[Event], *, durable: bool = True) -> None:
        """Add events at the stored next seq (each backend: ``dsh.store.rules.check_append``)."""
        raise NotImplementedError

    async def _load_session(self, session_id: str) -> LoadedSession:
        """Read the whole session back (the cut checked against the marker)."""
        raise NotImplementedError

    async def _read_events(self, session_id: str, seq: int) -> list[Event]:
        """The stored events from ``seq`` (non-negative) on."""
        raise NotImplementedError

    async def _exists_session(self, session_id: str) -> bool:
        """Whether the session is stored."""
        raise NotImplementedError

    async def _summaries(self, parent: str | None) -> list[SessionSummary]:
        """Every session (``parent`` ``None``) or ``parent``'s children, by ``createdAt`` then id."""
        raise NotImplementedError

    async def _fork_child(self, parent_id: str, options: ForkOptions) -> LoadedSession:
        """Store the child ``dsh.events.fork`` plans for the stored parent, and return it."""
        raise NotImplementedError

    async def _remove(self, ids: list[str]) -> None:
        """Remove these sessions all-or-nothing (their leases are held)."""
        raise NotImplementedError

    async def _shutdown(self) -> None:
        """Write buffered events durably, release resources and the leases (called once)."""
        raise NotImplementedError

    # -- the EventStore protocol ----------------------------------------------------------

    async def create(
        self,
        header: SessionHeader,
        seed: Sequence[Event] = (),
        *,
        inherited_event_count: int = 0,
    ) -> None:
        """Store a new session (see :meth:`dsh.store.base.EventStore.create`)."""
        await self._enter()
        check_seed(header, seed, inherited_event_count)
        await self._store_one(header, seed, inherited_event_count)

    async def create_batch(self, sessions: Sequence[LoadedSession]) -> None:
        """Create every session, or none."""
        await self._enter()
        extras = check_batch(sessions)
        if sessions:
            await self._store_many(sessions, extras)

    async def load(self, session_id: str) -> LoadedSession:
        """The session's header, persisted cut and every event."""
        await self._enter()
        await self._settle(session_id)
        return await self._load_session(session_id)

    async def read_from(self, session_id: str, seq: int) -> list[Event]:
        """The session's events from ``seq`` on."""
        await self._enter()
        check_read_seq(session_id, seq)
        await self._settle(session_id)
        return await self._read_events(session_id, seq)

    async def exists(self, session_id: str) -> bool:
        """Whether a session with this id is stored."""
        await self._enter()
        return await self._exists_session(session_id)

    async def list_sessions(self) -> list[SessionSummary]:
        """Every stored session, ordered by ``createdAt``, then id."""
        await self._enter()
        await self._settle(None)
        return await self._summaries(None)

    async def children(self, session_id: str) -> list[SessionSummary]:
        """The sessions whose ``parentSession`` is ``session_id``."""
        await self._enter()
        await self._settle(None)
        return await self._summaries(session_id)

    async def fork(
        self,
        parent_id: str,
        *,
        child_id: str | None = None,
        origin: str | None = None,
        delegation_depth: int | None = None,
        created_at: int | None = None,
    ) -> LoadedSession:
        """Store and return a child holding the parent's completed-turn prefix."""
        await self._enter()
        await self._settle(parent_id)
        return await self._fork_child(parent_id, ForkOptions(child_id, origin, delegation_depth, created_at))

    async def lease(self, session_id: str, *, wait: float = 0.0) -> SessionLease:
        """The session's single-writer lease (the backend's ``LeaseTable``)."""
        self._check_open()
        return await self._leases.acquire(session_id, wait)

    async def delete(self, session_id: str) -> list[str]:
        """Delete the session and its descendants under their leases, all or none."""
        await self._enter()
        await self._settle(None)
        return await delete_tree(self, session_id, self.where, self._remove)

    async def close(self) -> None:
        """Write buffered events durably and release every lease; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._shutdown()


class BufferedFront(StoreFront):
    """:class:`StoreFront` for the row stores (SQLite, PostgreSQL): appends go through ``_buffer``."""

    _buffer: AppendBuffer[Any]

    async def append(self, session_id: str, events: Sequence[Event], *, durable: bool = True) -> None:
        """Add events at the stored next seq; ``durable=False`` rows wait in the buffer."""
        self._check_open()
        await self._buffer.append(session_id, events, durable=durable, check_open=self._check_open)

    async def _settle(self, session_id: str | None) -> None:
        if session_id is None:
            await self._buffer.flush_all()
        else:
            await self._buffer.flush(session_id)

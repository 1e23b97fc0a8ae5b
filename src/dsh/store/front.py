"""``StoreFront``: the ``EventStore`` methods, written once; backends supply the storage.

Every rule a store applies before or around touching storage lives here or in what this
calls (:mod:`dsh.store.rules` for what ``create`` / ``append`` accept, ``dsh.events.fork``
for what a fork child holds, :mod:`dsh.store.deletion` for ``delete``): refusing use after
``close``, the seed and batch checks, the ``read_from`` seq check, writing buffered events
before a read, the fork options, the lease, and an idempotent ``close``. A backend (memory,
JSONL, SQLite, PostgreSQL) implements only the storage primitives of :class:`Storage` (and
``append``, whose next seq each keeps its own way; :class:`BufferedFront` for the row stores).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from dsh.errors import CorruptLogError, InvalidEventError
from dsh.events import Event, SessionHeader
from dsh.events.attachments import ATTACHMENT_ID, Attachment
from dsh.events.fork import ForkAt, ForkOptions
from dsh.ids import check_session_id
from dsh.store.base import ClosingStore, EventStore, LoadedSession, SessionLease, SessionSummary
from dsh.store.buffer import AppendBuffer
from dsh.store.deletion import delete_tree
from dsh.store.lease import LeaseTable
from dsh.store.rules import check_batch, check_no_cycle, check_seed
from dsh.store.spool import SpoolBatch, Spooled, encode_chunks


def check_media_type(media_type: str) -> None:
    """Refuse a media type that is not ``type/subtype`` (it is stored beside the bytes)."""
    kind, _, sub = media_type.partition("/")
    if not kind or not sub or len(media_type) > 100 or not media_type.isascii() or " " in media_type:
        raise InvalidEventError(f"attachment media type {media_type!r} is not type/subtype")


def check_read_seq(session_id: str, seq: int) -> None:
    """Refuse a negative ``read_from`` seq."""
    if seq < 0:
        raise InvalidEventError(f"session {session_id}: read_from needs a non-negative seq, got {seq}")


class Storage(EventStore, Protocol):
    """What a backend provides :class:`StoreFront`: the storage primitives (and ``append``)."""

    _closed: bool
    _leases: LeaseTable[Any]

    @property
    def where(self) -> str:
        """The store as error messages name it (a path, a URL, ``the memory store``)."""
        ...

    def _check_open(self) -> None:
        """Raise ``StoreClosedError`` (naming the store) once the store is closed."""
        ...

    async def _enter(self) -> None:
        """Called first by every operation: refuse a closed store (and any first-use setup)."""
        ...

    async def _settle(self, session_id: str | None) -> None:
        """Write the buffered events of ``session_id`` (every session: ``None``) before a read."""
        ...

    async def _store_one(self, header: SessionHeader, seed: Sequence[Event], cut: int) -> None:
        """Store one checked new session (``SessionExistsError`` for a stored id)."""
        ...

    async def _store_many(self, sessions: Sequence[LoadedSession], extras: Sequence[bytes | None]) -> None:
        """Store checked new sessions (``extras``: each one's extra header fields as JSON), all or none."""
        ...

    async def _load_session(self, session_id: str, streams: bool = True) -> LoadedSession:
        """Read the session back (the cut checked against the marker); ``streams=False``:
        events may come back partial (``dsh.events.deferred``)."""
        ...

    async def _read_events(self, session_id: str, seq: int) -> list[Event]:
        """The stored events from ``seq`` (non-negative) on."""
        ...

    async def _read_header(self, session_id: str) -> SessionHeader:
        """The stored session's header (``SessionNotFoundError``), without reading its events."""
        ...

    async def _exists_session(self, session_id: str) -> bool:
        """Whether the session is stored."""
        ...

    async def _summaries(self, parent: str | None) -> list[SessionSummary]:
        """Every session (``parent`` ``None``) or ``parent``'s children, by ``createdAt`` then id."""
        ...

    async def _fork_child(self, parent_id: str, options: ForkOptions) -> SessionSummary:
        """Store the child ``dsh.events.fork`` plans for the stored parent; its summary."""
        ...

    async def _referencing(self, ids: list[str]) -> list[str]:
        """The sessions holding events of ``ids`` by reference (none where forks copy)."""
        ...

    async def _remove(self, ids: list[str]) -> None:
        """Remove these sessions all-or-nothing (their leases are held)."""
        ...

    async def _shutdown(self) -> None:
        """Write buffered events durably, release resources and the leases (called once)."""
        ...

    async def _put_blob(self, attachment_id: str, media_type: str, data: bytes) -> None:
        """Store an attachment's bytes under its id, durably; an id already stored is kept."""
        ...

    async def _get_blob(self, attachment_id: str) -> tuple[str, bytes] | None:
        """The media type and bytes stored under the id (``None``: none)."""
        ...

    async def _spool_put(self, session_id: str, batch: SpoolBatch, chunks: bytes) -> None:
        """Keep a live batch (``chunks``: its deltas' JSON) after the session's others."""
        ...

    async def _spool_get(self, session_id: str, after: int) -> list[Spooled]:
        """The session's kept batches above cursor ``after``, in writing order."""
        ...

    async def _spool_drop(self, session_id: str, through: int) -> None:
        """Drop the session's batches whose stream began at or before ``through``."""
        ...


class StoreFront(ClosingStore):
    """The shared half of every backend: checks, ordering and the public signatures.

    Its methods run on a ``self`` that is :class:`Storage` (the backend subclass), so a
    backend missing a primitive fails to type-check where it is used.
    """

    async def _enter(self: Storage) -> None:
        """Refuse a closed store (a backend with first-use setup overrides this)."""
        self._check_open()

    async def _settle(self, session_id: str | None) -> None:
        """Nothing is buffered (a buffering backend overrides this)."""

    async def _referencing(self, ids: list[str]) -> list[str]:
        """None: forks copy their prefix (a backend with fork references overrides this)."""
        return []

    # -- the EventStore protocol ----------------------------------------------------------

    async def create(
        self: Storage,
        header: SessionHeader,
        seed: Sequence[Event] = (),
        *,
        inherited_event_count: int = 0,
    ) -> None:
        """Store a new session (see :meth:`dsh.store.base.EventStore.create`)."""
        await self._enter()
        check_seed(header, seed, inherited_event_count)
        await self._store_one(header, seed, inherited_event_count)

    async def create_batch(self: Storage, sessions: Sequence[LoadedSession]) -> None:
        """Create every session, or none (a batch closing a ``parentSession`` cycle is refused)."""
        await self._enter()
        extras = check_batch(sessions)
        if any(s.header.parent_session is not None for s in sessions):
            await self._settle(None)
            stored = {s.header.id: s.header.parent_session for s in await self._summaries(None)}
            check_no_cycle(sessions, stored)
        if sessions:
            await self._store_many(sessions, extras)

    async def load(self: Storage, session_id: str, *, streams: bool = True) -> LoadedSession:
        """The session's header, persisted cut and every event (``streams=False``: a surface
        read, see :meth:`dsh.store.base.EventStore.load`)."""
        await self._enter()
        await self._settle(session_id)
        return await self._load_session(session_id, streams)

    async def header(self: Storage, session_id: str) -> SessionHeader:
        """The session's header, without its events."""
        await self._enter()
        return await self._read_header(session_id)

    async def read_from(self: Storage, session_id: str, seq: int) -> list[Event]:
        """The session's events from ``seq`` on."""
        await self._enter()
        check_read_seq(session_id, seq)
        await self._settle(session_id)
        return await self._read_events(session_id, seq)

    async def exists(self: Storage, session_id: str) -> bool:
        """Whether a session with this id is stored."""
        await self._enter()
        return await self._exists_session(session_id)

    async def list_sessions(self: Storage) -> list[SessionSummary]:
        """Every stored session, ordered by ``createdAt``, then id."""
        await self._enter()
        await self._settle(None)
        return await self._summaries(None)

    async def children(self: Storage, session_id: str) -> list[SessionSummary]:
        """The sessions whose ``parentSession`` is ``session_id``."""
        await self._enter()
        await self._settle(None)
        return await self._summaries(session_id)

    async def fork(
        self: Storage,
        parent_id: str,
        *,
        child_id: str | None = None,
        origin: str | None = None,
        delegation_depth: int | None = None,
        created_at: int | None = None,
        at: int | None = None,
        at_seq: int | None = None,
    ) -> LoadedSession:
        """Store and return a child holding the parent's completed-turn prefix (through turn
        ``at``, or the first ``turn/end`` at or after seq ``at_seq``: ``dsh.events.fork``)."""
        summary = await self.branch(
            parent_id,
            child_id=child_id,
            origin=origin,
            delegation_depth=delegation_depth,
            created_at=created_at,
            at=at,
            at_seq=at_seq,
        )
        return await self._load_session(summary.header.id)

    async def branch(
        self: Storage,
        parent_id: str,
        *,
        child_id: str | None = None,
        origin: str | None = None,
        delegation_depth: int | None = None,
        created_at: int | None = None,
        at: int | None = None,
        at_seq: int | None = None,
        cwd: str | None = None,
    ) -> SessionSummary:
        """:meth:`fork` without reading the child back: its summary (O(1) by reference in
        SQLite and PostgreSQL, whatever the parent's length); ``cwd`` replaces the parent's."""
        await self._enter()
        point = ForkAt.of(at, at_seq)
        if child_id is not None:
            check_session_id(child_id, "child session id")
        await self._settle(parent_id)
        options = ForkOptions(child_id, origin, delegation_depth, created_at, at=point, cwd=cwd)
        return await self._fork_child(parent_id, options)

    async def lease(self: Storage, session_id: str, *, wait: float = 0.0) -> SessionLease:
        """The session's single-writer lease (the backend's ``LeaseTable``)."""
        self._check_open()
        return await self._leases.acquire(session_id, wait)

    async def delete(self: Storage, session_id: str, *, with_children: bool = True) -> list[str]:
        """Delete the session and its descendants under their leases, all or none;
        ``with_children=False`` refuses (``ParentReferencedError``) when any of them holds
        another's events by reference."""
        await self._enter()
        await self._settle(None)
        refs = None if with_children else self._referencing
        return await delete_tree(self, session_id, self.where, self._remove, refs)

    async def put_attachment(self: Storage, attachment: Attachment) -> str:
        """Store the attachment's bytes once by their sha256; its id."""
        await self._enter()
        check_media_type(attachment.media_type)
        await self._put_blob(attachment.id, attachment.media_type, attachment.data)
        return attachment.id

    async def get_attachment(self: Storage, attachment_id: str) -> Attachment | None:
        """The stored attachment with its digest verified, ``None`` when not stored."""
        await self._enter()
        if not ATTACHMENT_ID.match(attachment_id):
            raise InvalidEventError(f"{attachment_id!r} is not an attachment id (sha256:<64 hex>)")
        found = await self._get_blob(attachment_id)
        if found is None:
            return None
        attachment = Attachment(found[0], found[1])
        if attachment.id != attachment_id:
            raise CorruptLogError(f"{self.where}: attachment {attachment_id} does not match its bytes")
        return attachment

    # -- SpoolingStore (dsh.store.spool) ---------------------------------------------------

    async def spool(self: Storage, session_id: str, batch: SpoolBatch) -> None:
        """Keep a live batch of a model call's deltas for readers in other processes."""
        await self._enter()
        await self._spool_put(session_id, batch, encode_chunks(batch.chunks))

    async def spooled(self: Storage, session_id: str, after: int = 0) -> list[Spooled]:
        """The session's kept batches with a cursor above ``after``, in writing order."""
        await self._enter()
        return await self._spool_get(session_id, after)

    async def unspool(self: Storage, session_id: str, through: int) -> None:
        """Drop the session's batches whose stream began at or before seq ``through``."""
        await self._enter()
        await self._spool_drop(session_id, through)

    async def close(self: Storage) -> None:
        """Write buffered events durably and release every lease; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._shutdown()


class BufferedStorage(Storage, Protocol):
    """A row store: :class:`Storage` with an ``AppendBuffer`` of pending rows."""

    _buffer: AppendBuffer[Any]


class BufferedFront(StoreFront):
    """:class:`StoreFront` for the row stores (SQLite, PostgreSQL): appends go through ``_buffer``."""

    async def append(
        self: BufferedStorage, session_id: str, events: Sequence[Event], *, durable: bool = True
    ) -> None:
        """Add events at the stored next seq; ``durable=False`` rows wait in the buffer."""
        self._check_open()
        await self._buffer.append(session_id, events, durable=durable, check_open=self._check_open)

    async def _settle(self: BufferedStorage, session_id: str | None) -> None:
        """Write the session's buffered rows (every session's: ``None``)."""
        if session_id is None:
            await self._buffer.flush_all()
        else:
            await self._buffer.flush(session_id)

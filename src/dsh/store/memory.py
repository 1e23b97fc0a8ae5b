"""``MemoryEventStore``: the in-process store (tests, ephemeral runs) with the full contract.

Events are kept as their canonical encoded lines, so a stored log is isolated from the
caller's objects and every load decodes exactly what a file-backed store would.
Several store handles may share one :class:`MemorySpace` (the equivalent of reopening a
database file); closing a handle does not clear the space.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh.errors import SessionExistsError, SessionNotFoundError, StoreClosedError
from dsh.events import Event, SessionHeader, check_cut
from dsh.events.fork import ForkOptions, fork_cut, fork_plan, resolve_cut, turn_marks
from dsh.events.vocabulary import TURN_END
from dsh.store.base import LeaseHolder, LoadedSession, SessionSummary
from dsh.store.codec import decode_event_line, encode_event_checked
from dsh.store.extras import decode_extra
from dsh.store.front import StoreFront
from dsh.store.lease import LeaseTable
from dsh.store.rules import check_append
from dsh.store.spool import MemorySpool, SpoolBatch, Spooled


@dataclass(slots=True)
class _Stored:
    header: SessionHeader
    inherited_event_count: int
    lines: list[bytes] = field(default_factory=list)
    prefix: int = 0
    """Length of the completed-turn prefix (through the last ``turn/end``)."""
    extra: bytes | None = None
    """Unknown header fields of an imported log, as JSON."""


class MemorySpace:
    """The sessions (and session leases) a set of :class:`MemoryEventStore` handles share."""

    __slots__ = ("attachments", "leases", "sessions", "spool")

    def __init__(self) -> None:
        self.sessions: dict[str, _Stored] = {}
        self.attachments: dict[str, tuple[str, bytes]] = {}
        self.leases: dict[str, tuple[object, LeaseHolder]] = {}
        self.spool = MemorySpool()


class _MemoryLeases:
    """The in-process lease backend: a lock per session id in the shared space."""

    def __init__(self, space: MemorySpace) -> None:
        self.space = space

    async def try_acquire(self, session_id: str, me: LeaseHolder) -> tuple[str, object] | None:
        if session_id in self.space.leases:
            return None
        token = object()
        self.space.leases[session_id] = (token, me)
        return session_id, token

    async def holder(self, session_id: str) -> LeaseHolder | None:
        entry = self.space.leases.get(session_id)
        return None if entry is None else entry[1]

    async def give_up(self, session_id: str) -> None:
        return None

    async def release(self, lock: tuple[str, object]) -> None:
        session_id, token = lock
        entry = self.space.leases.get(session_id)
        if entry is not None and entry[0] is token:
            del self.space.leases[session_id]


class MemoryEventStore(StoreFront):
    """An ``EventStore`` held in process memory (``memory:``)."""

    WHERE = "the memory store"

    def __init__(self, space: MemorySpace | None = None) -> None:
        self.space = space if space is not None else MemorySpace()
        self._leases = LeaseTable(_MemoryLeases(self.space))
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the memory store is closed")

    def _get(self, session_id: str) -> _Stored:
        self._check_open()
        stored = self.space.sessions.get(session_id)
        if stored is None:
            raise SessionNotFoundError(session_id, self.WHERE)
        return stored

    def _decode(self, session_id: str, lines: Sequence[bytes], start: int = 0) -> list[Event]:
        where = f"session {session_id} in {self.WHERE}"
        return [  # its own lines, encoded when appended: their shapes are not checked again
            decode_event_line(line, f"{where}, seq {start + i}", shapes=False) for i, line in enumerate(lines)
        ]

    @property
    def where(self) -> str:
        """``the memory store``."""
        return self.WHERE

    async def _store_one(self, header: SessionHeader, seed: Sequence[Event], cut: int) -> None:
        lines = [encode_event_checked(e) for e in seed]
        if header.id in self.space.sessions:
            raise SessionExistsError(header.id, self.WHERE)
        self.space.sessions[header.id] = _Stored(header, cut, lines, fork_cut(seed))

    async def _store_many(self, sessions: Sequence[LoadedSession], extras: Sequence[bytes | None]) -> None:
        stored = []
        for s, extra in zip(sessions, extras, strict=True):
            if s.header.id in self.space.sessions:
                raise SessionExistsError(s.header.id, self.WHERE)
            lines = [encode_event_checked(e) for e in s.events]
            prefix = fork_cut(s.events)
            stored.append(_Stored(s.header, s.inherited_event_count, lines, prefix, extra))
        for item in stored:
            self.space.sessions[item.header.id] = item

    async def append(self, session_id: str, events: Sequence[Event], *, durable: bool = True) -> None:
        stored = self._get(session_id)
        check_append(session_id, events, len(stored.lines))
        lines = [encode_event_checked(e) for e in events]
        stored.lines.extend(lines)
        for i in range(len(events) - 1, -1, -1):
            if events[i].type == TURN_END:
                stored.prefix = events[i].seq + 1
                break

    async def _load_session(self, session_id: str, streams: bool = True) -> LoadedSession:
        stored = self._get(session_id)
        events = self._decode(session_id, stored.lines)
        check_cut(stored.header, stored.inherited_event_count, events)
        extra = decode_extra(stored.extra, f"session {session_id} in {self.WHERE}")
        return LoadedSession(stored.header, stored.inherited_event_count, events, header_extra=extra)

    async def _read_events(self, session_id: str, seq: int) -> list[Event]:
        return self._decode(session_id, self._get(session_id).lines[seq:], seq)

    async def _read_header(self, session_id: str) -> SessionHeader:
        return self._get(session_id).header

    async def _exists_session(self, session_id: str) -> bool:
        return session_id in self.space.sessions

    async def _summaries(self, parent: str | None) -> list[SessionSummary]:
        rows = [
            SessionSummary(s.header, s.inherited_event_count, len(s.lines))
            for s in self.space.sessions.values()
            if parent is None or s.header.parent_session == parent
        ]
        rows.sort(key=lambda r: (r.header.created_at, r.header.id))
        return rows

    async def _fork_child(self, parent_id: str, options: ForkOptions) -> SessionSummary:
        parent = self._get(parent_id)
        at = options.at
        if at is None:
            n = parent.prefix
        else:
            n = resolve_cut(parent_id, turn_marks(self._decode(parent_id, parent.lines)), at)
        plan = fork_plan(parent.header, n, options)
        header = plan.header
        if header.id in self.space.sessions:
            raise SessionExistsError(header.id, self.WHERE)
        lines = parent.lines[:n]
        if plan.marker is not None:
            lines.append(encode_event_checked(plan.marker))
        self.space.sessions[header.id] = _Stored(header, n, lines, n)
        return SessionSummary(header, n, len(lines))

    async def _remove(self, ids: list[str]) -> None:
        for sid in ids:
            self.space.sessions.pop(sid, None)
        self.space.spool.drop(ids)

    async def _spool_put(self, session_id: str, batch: SpoolBatch, chunks: bytes) -> None:
        self.space.spool.spool(session_id, batch)

    async def _spool_get(self, session_id: str, after: int) -> list[Spooled]:
        return self.space.spool.spooled(session_id, after)

    async def _spool_drop(self, session_id: str, through: int) -> None:
        self.space.spool.unspool(session_id, through)

    async def _put_blob(self, attachment_id: str, media_type: str, data: bytes) -> None:
        self.space.attachments.setdefault(attachment_id, (media_type, data))

    async def _get_blob(self, attachment_id: str) -> tuple[str, bytes] | None:
        return self.space.attachments.get(attachment_id)

    async def _shutdown(self) -> None:
        await self._leases.close()

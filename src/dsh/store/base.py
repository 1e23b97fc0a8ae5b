"""The ``EventStore`` Protocol and the value types every store returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, Self, runtime_checkable

from dsh.events import Event, SessionHeader
from dsh.events.attachments import Attachment
from dsh.events.history import HistoryMessage, history_messages


@dataclass(frozen=True, slots=True)
class LoadedSession:
    """A session read back: its header, its explicit inherited cut and every event."""

    header: SessionHeader
    inherited_event_count: int
    events: Sequence[Event]
    warnings: tuple[str, ...] = ()
    dropped_bytes: int = 0
    """Bytes of a torn tail that the load left out (JSONL only; truncated by the next append)."""
    header_extra: dict[str, Any] = field(default_factory=dict)
    """Header fields dsh does not know, kept from an imported log (see ``dsh.store.extras``)."""
    loss: str | None = None
    """Events dsh appended durably are missing (JSONL: the file was cut short; ``dsh.store.seal``):
    the one line naming the file and the seqs. Nothing may be appended to such a session."""

    @property
    def own_events(self) -> Sequence[Event]:
        """The events from the inherited cut on (the marker, then the session's own work);
        every event of a session that inherited nothing."""
        return self.events[self.inherited_event_count :]

    @property
    def messages(self) -> list[HistoryMessage]:
        """The model-visible history (inherited turns included) as typed messages."""
        return history_messages(self.events)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One row of a listing: the header, the cut, the event count and, when the store reads it
    with the row (SQLite, PostgreSQL, JSONL), the time of the last event."""

    header: SessionHeader
    inherited_event_count: int
    event_count: int
    last_time: int | None = None
    """The last event's time; ``None``: no event, or not read with the listing."""


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who holds a session lease: process id, host name and since when (epoch ms)."""

    pid: int
    host: str
    since: int

    @property
    def since_text(self) -> str:
        """``since`` as a UTC timestamp to the second, e.g. ``2026-12-01T09:30:00Z``."""
        try:
            moment = datetime.fromtimestamp(self.since / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return str(self.since)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class SessionLease(Protocol):
    """A held session lease: the one live writer's right to append (``release`` is idempotent)."""

    @property
    def session_id(self) -> str:
        """The session the lease is for."""
        ...

    @property
    def holder(self) -> LeaseHolder:
        """This process's holder record (pid, host, since)."""
        ...

    async def release(self) -> None:
        """Give the lease back (the handle's last token frees the session); idempotent."""
        ...


@runtime_checkable
class EventStore(Protocol):
    """Durable, append-only storage of session logs.

    Contract (run against every implementation by ``dsh.store.contract``):

    - ``create`` stores a header with an optional seed and its explicit cut; the
      (header, cut, seed) triple must satisfy the inherited-cut rules.
    - ``append`` adds events whose first seq is the stored next seq (else
      ``SeqConflictError``); ``durable=True`` returns only after the events (and all
      earlier ones) are on stable storage. ``durable=False`` events may be buffered: reads
      through the same store see them, and they are written at the next durable append,
      read or ``close()``. Appending the tagged cut marker is refused.
    - ``load`` returns the header, the cut as persisted (never recomputed), and events;
      ``read_from`` the events from a seq on.
    - ``fork`` creates a child holding the parent's completed-turn prefix plus the tagged
      marker; an empty prefix gives an unseeded child.
    - ``list_sessions`` / ``children`` (sessions whose ``parentSession`` is the id) are
      ordered by ``createdAt`` then id.
    - ``create_batch`` creates several sessions (header, cut, seed each) all-or-nothing:
      when one is refused (or the store fails) none of them is stored.
    - ``lease`` takes the session's single-writer lease (held until released or the
      store handle closes, and released by the OS or server when the holder dies); another
      holder makes it raise ``SessionBusyError`` at once, or after ``wait`` seconds of
      polling. One handle may hold a lease more than once (it is shared). Readers never
      need it. A lease may be taken before the session exists.
    - ``delete`` removes a session and every descendant (sessions whose ``parentSession``
      chain leads to it) all-or-nothing, under each one's lease: when another holder has
      any of those leases it raises ``SessionBusyError`` and deletes nothing; a missing
      session raises ``SessionNotFoundError``. A crash mid-delete never leaves some of them
      deleted and others not (the next open finishes a journalled file delete).
    - ``put_attachment`` stores an attachment's bytes once by their sha256 (a second put of
      the same bytes is a no-op); ``get_attachment`` returns them with the digest verified
      (a mismatch is ``CorruptLogError``), ``None`` when not stored. JSONL keeps them beside
      the logs (``<root>/attachments/<2 hex>/<64 hex>``), SQLite and PostgreSQL in a table.
    - ``close`` writes buffered events durably and releases every lease; any later call
      raises ``StoreClosedError``. ``async with store:`` closes it at the end
      (:class:`ClosingStore` gives every backend the two methods).
    """

    async def create(
        self,
        header: SessionHeader,
        seed: Sequence[Event] = (),
        *,
        inherited_event_count: int = 0,
    ) -> None:
        """Store a new session: ``header``, a ``seed`` with seqs 0..n-1 and its explicit cut.

        The triple must obey the inherited-cut rules (else ``InvalidEventError``); an
        existing id raises ``SessionExistsError``; nothing is stored on refusal.
        """
        ...

    async def append(self, session_id: str, events: Sequence[Event], *, durable: bool = True) -> None:
        """Add ``events``, the first at the stored next seq (else ``SeqConflictError``).

        ``durable=True`` returns once they (and every earlier event) are on stable storage;
        ``durable=False`` may buffer them until the next durable point.
        """
        ...

    async def load(self, session_id: str, *, streams: bool = True) -> LoadedSession:
        """The session's header, its cut as persisted and every event (``SessionNotFoundError``).

        ``streams=False`` is a surface read for readers of the model-visible history (resume):
        any settlement may come back without its stream and wire and any version-0 chunk
        without data, marked ``Event.partial`` (``dsh.events.deferred``); a store that keeps
        them apart skips reading them. Partial events cannot be written back."""
        ...

    async def header(self, session_id: str) -> SessionHeader:
        """The session's header alone, read without its events (``SessionNotFoundError``)."""
        ...

    async def read_from(self, session_id: str, seq: int) -> list[Event]:
        """The session's events from ``seq`` on (a negative ``seq`` is ``InvalidEventError``)."""
        ...

    async def exists(self, session_id: str) -> bool:
        """Whether a session with this id is stored."""
        ...

    async def list_sessions(self) -> list[SessionSummary]:
        """Every stored session, ordered by ``createdAt``, then id."""
        ...

    async def children(self, session_id: str) -> list[SessionSummary]:
        """The sessions whose ``parentSession`` is ``session_id``, ordered like :meth:`list_sessions`."""
        ...

    async def fork(
        self,
        parent_id: str,
        *,
        child_id: str | None = None,
        origin: str | None = None,
        delegation_depth: int | None = None,
        created_at: int | None = None,
        at: int | None = None,
        at_seq: int | None = None,
    ) -> LoadedSession:
        """Store and return a child of ``parent_id`` holding its completed-turn prefix.

        What the child holds (header, seed, cut) is :func:`dsh.events.fork.fork_plan`'s answer;
        a parent without a completed turn gives an unseeded child with no events. ``at`` cuts
        after that turn's ``turn/end``, ``at_seq`` at the first ``turn/end`` at or after that
        seq (:func:`dsh.events.fork.resolve_cut`: ``ForkOpenTurnError``, ``ForkBoundaryError``).
        """
        ...

    async def branch(
        self,
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
        """:meth:`fork` returning the child's summary instead of reading it back (``cwd``:
        the child's workspace, default the parent's)."""
        ...

    async def create_batch(self, sessions: Sequence[LoadedSession]) -> None:
        """Create every session (header, cut, seed, extra header fields) or, on any refusal, none."""
        ...

    async def lease(self, session_id: str, *, wait: float = 0.0) -> SessionLease:
        """Take the session's single-writer lease, polling up to ``wait`` s (``SessionBusyError``)."""
        ...

    async def delete(self, session_id: str, *, with_children: bool = True) -> list[str]:
        """Delete ``session_id`` with its descendants; return the deleted ids, the session first.

        ``with_children=False``: refuse (``ParentReferencedError``, naming them) when forks
        among them hold the session's events by reference (SQLite, PostgreSQL)."""
        ...

    async def put_attachment(self, attachment: Attachment) -> str:
        """Store ``attachment`` once by its sha256 and return its id (``sha256:<hex>``)."""
        ...

    async def get_attachment(self, attachment_id: str) -> Attachment | None:
        """The stored attachment, its digest verified (``None``: not stored)."""
        ...

    async def close(self) -> None:
        """Write buffered events durably and release every lease; later calls raise ``StoreClosedError``."""
        ...

    async def __aenter__(self) -> Self:
        """The store itself."""
        ...

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the store (:meth:`close`)."""
        ...


@runtime_checkable
class ReportsDamage(Protocol):
    """A store that can skip a session whose log it cannot read (JSONL: one file per session)."""

    async def damaged_log(self, id_prefix: str) -> str | None:
        """Why the log of a session whose id starts with ``id_prefix`` cannot be read (naming
        its file and line), when the store holds such a damaged log; else ``None``."""
        ...


@runtime_checkable
class HasLocalFiles(Protocol):
    """A store kept in files on this machine (SQLite, JSONL): what a workspace checkpoint must
    leave out when the store lives inside the workspace."""

    def local_files(self) -> tuple[Path, ...]:
        """Every file and directory the store writes (a database's sidecars included)."""
        ...


@runtime_checkable
class KeepsDigests(Protocol):
    """A store that keeps what listings derive from each session's events (SQLite; JSONL in a
    file beside the logs, ``dsh.store.jsonl_kept``): opaque JSON per session, valid for the
    event count it was derived at (a log only grows, and a deleted session's digest goes with
    it)."""

    async def kept_digests(self, ids: Sequence[str] | None = None) -> dict[str, tuple[int, bytes]]:
        """The kept digests of ``ids`` (``None``: every one): session id → (event count it was
        derived at, its JSON); a session without one is absent."""
        ...

    async def keep_digests(self, digests: Sequence[tuple[str, int, bytes]]) -> None:
        """Keep ``(session id, event count, JSON)`` digests, replacing older ones (a session
        deleted meanwhile is skipped)."""
        ...


@runtime_checkable
class FindsLatest(Protocol):
    """A store that finds the session ``--continue`` takes without listing every one (SQLite,
    PostgreSQL: one query ordered by each session's last event time; JSONL: each file's header
    and the time on its last line, where its seal vouches for it)."""

    async def latest_top_level(self, cwd: str) -> str | None:
        """The id :func:`dsh.store.newest.latest_listed` finds: of the sessions recorded in
        ``cwd`` that no agent started as its subagent, the one with the latest activity, then
        the latest created, then the greatest id; ``None`` when there is none."""
        ...


@runtime_checkable
class ListsNewest(Protocol):
    """A store that reads its newest sessions without listing every one (SQLite, PostgreSQL: a
    SQL ``LIMIT`` and a recursive walk of the parent index; JSONL: picked from the files'
    headers, only those summarized)."""

    async def newest_sessions(self, count: int) -> list[SessionSummary]:
        """The ``count`` most recently created sessions (by ``createdAt``, then id) and every
        descendant of them, each once, ordered like :meth:`EventStore.list_sessions`."""
        ...

    async def newest_roots(self, count: int) -> tuple[int, list[SessionSummary]]:
        """How many sessions the store holds, and the ``count`` most recently created *top rows*
        (a session with no parent, with itself as parent, or whose parent is not stored) with
        every descendant of them, each once, ordered like :meth:`EventStore.list_sessions`: the
        first rows of a listing that nests each child under its parent (``dsh.ui.views.nest``)."""
        ...


class _Closable(Protocol):
    async def close(self) -> None:
        """Close the store."""
        ...


class ClosingStore:
    """``async with store:`` for a backend: the store itself, closed (its own ``close``) on the way out."""

    __slots__ = ()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self: _Closable, *exc_info: object) -> None:
        await self.close()

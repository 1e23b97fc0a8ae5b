"""The rules every store enforces on ``create`` and ``append`` (``fork``: ``dsh.events.fork``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from dsh import jsonx
from dsh.errors import InvalidEventError, SeqConflictError, SessionExistsError
from dsh.events import Event, SessionHeader, check_cut, is_cut_marker
from dsh.events.lineage import parent_cycle
from dsh.events.vocabulary import SESSION_END_SEED
from dsh.ids import check_session_id
from dsh.store.base import LoadedSession
from dsh.store.codec import check_envelope
from dsh.store.extras import check_header_extra

MAX_INT: Final = 2**63 - 1


def check_seed(header: SessionHeader, seed: Sequence[Event], inherited_event_count: int) -> None:
    """Refuse a creation seed: a malformed id or parent id, a session naming itself as its
    parent, envelopes, contiguous seqs from 0, and the inherited-cut rules."""
    check_header_ids(header)
    where = f"session {header.id}"
    if header.created_at > MAX_INT or header.delegation_depth > MAX_INT:
        raise InvalidEventError(f"{where}: header integers must fit in 64 bits")
    jsonx.encode_checked(header.to_wire(), f"{where} header")
    for i, event in enumerate(seed):
        check_envelope(event, f"{where}, seed event {i}")
        if event.seq != i:
            raise InvalidEventError(
                f"{where}: seed seqs must be contiguous from 0; expected {i}, found {event.seq}"
            )
    check_cut(header, inherited_event_count, seed)


def check_header_ids(header: SessionHeader) -> None:
    """Refuse a header whose id or ``parentSession`` is not a valid session id (``dsh.ids``),
    or that names itself as its parent."""
    check_session_id(header.id)
    if header.parent_session is not None:
        check_session_id(header.parent_session, "parent session id")
        if header.parent_session == header.id:
            raise InvalidEventError(f"session {header.id} names itself as its parent (a parentSession cycle)")


def check_no_cycle(sessions: Sequence[LoadedSession], stored_parents: Mapping[str, str | None]) -> None:
    """Refuse a batch that would close a ``parentSession`` cycle with itself or the stored sessions."""
    parents = dict(stored_parents)
    parents.update({s.header.id: s.header.parent_session for s in sessions})
    for session in sessions:
        cycle = parent_cycle(session.header.id, parents.get)
        if cycle is not None:
            raise InvalidEventError(
                f"session {session.header.id}: its parentSession chain is a cycle ({' -> '.join(cycle)})"
            )


def check_batch(sessions: Sequence[LoadedSession]) -> list[bytes | None]:
    """Refuse a ``create_batch``: a session :func:`check_seed` refuses, bad extra header fields,
    or one id twice. Returns each session's extra header fields as JSON (``None`` when none)."""
    seen: set[str] = set()
    extras: list[bytes | None] = []
    for session in sessions:
        check_seed(session.header, session.events, session.inherited_event_count)
        sid = session.header.id
        extras.append(check_header_extra(session.header_extra, sid))
        if sid in seen:
            raise SessionExistsError(sid, "this batch (it holds the id twice)")
        seen.add(sid)
    return extras


def check_append(session_id: str, events: Sequence[Event], next_seq: int) -> None:
    """Refuse an append batch: stale first seq, gaps, bad envelopes or a cut marker.

    The first seq must equal the stored next seq (else :class:`SeqConflictError`); the
    tagged cut marker is written only at creation, so appending one is refused.
    """
    if not events:
        return
    first = events[0].seq
    if first != next_seq:
        raise SeqConflictError(session_id, next_seq, first)
    where = f"session {session_id}"
    for i, event in enumerate(events):
        seq = next_seq + i
        if event.seq != seq:
            raise InvalidEventError(
                f"{where}: append seqs must be contiguous; expected {seq}, found {event.seq}"
            )
        check_envelope(event, f"{where}, event {seq}")
        if event.type == SESSION_END_SEED and is_cut_marker(event):
            raise InvalidEventError(
                f"{where}: the inherited-cut marker is written only when a session is created (seq {seq})"
            )

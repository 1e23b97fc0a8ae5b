"""Stored children: a child's descriptor and its state read back from its log and lease.

A background child is a session like any other, so what survives a crash is its log. Its
state is read from there: ``running`` (a turn is open and another process holds its
lease), ``interrupted`` (a turn a crash left open — nobody holds the lease — or a last turn
that was stopped), ``failed`` (its last turn ended ``error``), else ``finished``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from dsh.errors import SessionBusyError
from dsh.events import Event
from dsh.events.descriptor import find_descriptor
from dsh.events.payloads import turn_end_kind
from dsh.events.vocabulary import TURN_END
from dsh.model import Delegation
from dsh.session import open_turn
from dsh.store import EventStore

ChildState = Literal["running", "interrupted", "failed", "finished"]


def logged_state(events: Sequence[Event], *, lease_held_elsewhere: bool) -> ChildState:
    """The state of a child whose log is ``events`` (its own events)."""
    if open_turn(events) is not None:
        return "running" if lease_held_elsewhere else "interrupted"
    for event in reversed(events):
        if event.type == TURN_END:
            kind = turn_end_kind(event)
            if kind in ("aborted", "interrupted"):
                return "interrupted"
            return "failed" if kind == "error" else "finished"
    return "finished"


async def lease_held_elsewhere(store: EventStore, session_id: str) -> bool:
    """Whether another process holds ``session_id``'s lease (probed by taking it at once)."""
    try:
        lease = await store.lease(session_id)
    except SessionBusyError:
        return True
    await lease.release()
    return False


@dataclass(frozen=True, slots=True)
class StoredChild:
    """A continuable child as its log tells it."""

    id: str
    label: str
    depth: int
    delegation: Delegation | None
    state: ChildState
    kind: str | None = None
    """``fork`` or ``spawn`` (the descriptor's provider)."""


async def stored_children(store: EventStore, parent_id: str) -> list[StoredChild]:
    """The continuable children stored under ``parent_id``, in creation order."""
    out: list[StoredChild] = []
    rows = sorted(await store.children(parent_id), key=lambda s: (s.header.created_at, s.header.id))
    for row in rows:
        loaded = await store.load(row.header.id)
        own = loaded.events[loaded.inherited_event_count :]
        found = find_descriptor(own)
        if found is None or found.mode != "continuable":
            continue
        call_id = found.call_id
        busy = open_turn(own) is not None and await lease_held_elsewhere(store, row.header.id)
        out.append(
            StoredChild(
                row.header.id,
                found.label or "",
                row.header.delegation_depth,
                Delegation(parent_id, call_id) if call_id is not None else None,
                logged_state(own, lease_held_elsewhere=busy),
                found.provider,
            )
        )
    return out

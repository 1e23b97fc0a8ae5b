"""Stored children: a child's descriptor and its state read back from its log and lease.

A background child is a session like any other, so what survives a crash is its log. Its
state is read from there: ``running`` (a turn is open and another process holds its
lease), ``interrupted`` (a turn a crash left open — nobody holds the lease — or a last turn
that was stopped), ``failed`` (its last turn ended ``error``), else ``finished``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dsh.errors import SessionBusyError
from dsh.events import Event
from dsh.events.vocabulary import SUBAGENT_DESCRIPTOR, TURN_END
from dsh.model import Delegation
from dsh.session import open_turn
from dsh.store import EventStore

ChildState = Literal["running", "interrupted", "failed", "finished"]


def descriptor(events: list[Event]) -> dict[str, Any] | None:
    """A child's first ``subagent/descriptor``, if it has one."""
    for event in events:
        if event.type == SUBAGENT_DESCRIPTOR and isinstance(event.data, dict):
            return event.data
    return None


def logged_state(events: list[Event], *, lease_held_elsewhere: bool) -> ChildState:
    """The state of a child whose log is ``events`` (its own events)."""
    if open_turn(events) is not None:
        return "running" if lease_held_elsewhere else "interrupted"
    for event in reversed(events):
        if event.type == TURN_END:
            kind = event.data.get("reason", {}).get("kind")
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


async def stored_children(store: EventStore, parent_id: str) -> list[StoredChild]:
    """The continuable children stored under ``parent_id``, in creation order."""
    out: list[StoredChild] = []
    rows = sorted(await store.children(parent_id), key=lambda s: (s.header.created_at, s.header.id))
    for row in rows:
        loaded = await store.load(row.header.id)
        own = loaded.events[loaded.inherited_event_count :]
        found = descriptor(own)
        if found is None or found.get("mode") != "continuable":
            continue
        where = found.get("delegation")
        call_id = where.get("callId") if isinstance(where, dict) else None
        busy = open_turn(own) is not None and await lease_held_elsewhere(store, row.header.id)
        out.append(
            StoredChild(
                row.header.id,
                str(found.get("label", "")),
                row.header.delegation_depth,
                Delegation(parent_id, call_id) if isinstance(call_id, str) else None,
                logged_state(own, lease_held_elsewhere=busy),
            )
        )
    return out

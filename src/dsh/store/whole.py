"""Events read whole again: what a writer copying a surface read's events must use."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import Event
from dsh.store.base import EventStore


async def whole_prefix(store: EventStore, session_id: str, events: Sequence[Event]) -> Sequence[Event]:
    """``events`` (the stored session's first events), with any partial one read whole.

    A session resumed by a surface read (``load(streams=False)``) holds partial events; a
    copy of them (a fork child's seed) needs their streams, so it reads the session again,
    whole. No partial event: ``events`` itself, nothing read."""
    if not any(e.partial for e in events):
        return events
    loaded = await store.load(session_id)
    return loaded.events[: len(events)]

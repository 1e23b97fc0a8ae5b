"""A bounded listing's read: the newest sessions of any store and their descendants."""

from __future__ import annotations

from dsh.events.lineage import below
from dsh.store.base import EventStore, ListsNewest, SessionSummary


async def newest_sessions(store: EventStore, count: int) -> list[SessionSummary]:
    """The ``count`` most recently created sessions (by ``createdAt``, then id) and every
    descendant of them, each once, ordered like ``list_sessions``: a store that
    ``ListsNewest`` (SQLite) reads only those rows; any other lists every session."""
    if isinstance(store, ListsNewest):
        return await store.newest_sessions(count)
    summaries = sorted(await store.list_sessions(), key=lambda s: (s.header.created_at, s.header.id))
    kids: dict[str, list[str]] = {}
    for s in summaries:
        if s.header.parent_session is not None:
            kids.setdefault(s.header.parent_session, []).append(s.header.id)
    newest = summaries[-count:] if count > 0 else []
    wanted = {sid for s in newest for sid in below(s.header.id, lambda p: kids.get(p, ()))}
    return [s for s in summaries if s.header.id in wanted]

"""Deleting a session with its descendants: the one algorithm every store's ``delete`` runs.

:func:`delete_tree` finds the session's descendants (``children`` level by level, a
``parentSession`` cycle visited once), takes every one's single-writer lease at once
(``wait=0``: a session a live writer holds refuses the whole delete with the one-line
``SessionBusyError``), then hands the ids, leaves first, to the backend's ``remove`` —
which deletes them all or none (one transaction, or a journalled file delete). The leases
are released afterwards whatever happened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dsh.errors import ParentReferencedError, SessionNotFoundError
from dsh.store.base import EventStore, SessionLease

Remove = Callable[[list[str]], Awaitable[None]]
"""The backend's all-or-nothing removal of the given sessions (ordered leaves first)."""
Referencing = Callable[[list[str]], Awaitable[list[str]]]
"""The backend's sessions that hold events of the given ones by reference."""


async def descendants(store: EventStore, session_id: str) -> list[str]:
    """``session_id`` and every session below it, parents before children (breadth first)."""
    order = [session_id]
    seen = {session_id}
    i = 0
    while i < len(order):
        for child in await store.children(order[i]):
            cid = child.header.id
            if cid not in seen:
                seen.add(cid)
                order.append(cid)
        i += 1
    return order


async def delete_tree(
    store: EventStore, session_id: str, where: str, remove: Remove, referencing: Referencing | None = None
) -> list[str]:
    """Delete ``session_id`` and its descendants under their leases; return the ids, root first.

    Raises ``SessionNotFoundError`` (naming ``where``) when the session is not stored,
    ``ParentReferencedError`` when ``referencing`` is given and names sessions holding events
    of these by reference, and ``SessionBusyError`` when another holder has the lease of any
    of them; then nothing is deleted.
    """
    if not await store.exists(session_id):
        raise SessionNotFoundError(session_id, where)
    ids = await descendants(store, session_id)
    if referencing is not None:
        refs = sorted(set(await referencing(ids)))
        if refs:
            raise ParentReferencedError(session_id, refs)
    leases: list[SessionLease] = []
    try:
        for sid in ids:
            leases.append(await store.lease(sid))
        await remove(list(reversed(ids)))
    finally:
        for lease in leases:
            await lease.release()
    return ids

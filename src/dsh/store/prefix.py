"""Session ids as people type them: the stored ids a prefix names (the CLI and the viewer use it)."""

from __future__ import annotations

from dsh.store.base import EventStore


async def ids_with_prefix(store: EventStore, prefix: str) -> list[str]:
    """``[prefix]`` when it is a stored id itself, else every stored id starting with it, sorted."""
    if not prefix:
        return []
    if await store.exists(prefix):
        return [prefix]
    return sorted(s.header.id for s in await store.list_sessions() if s.header.id.startswith(prefix))

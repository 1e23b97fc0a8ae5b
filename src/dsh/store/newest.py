"""Bounded reads of a store's sessions: the newest sessions and their descendants, and the
session with the latest activity (what ``--continue`` takes)."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Protocol

from dsh.events.lineage import below
from dsh.store.base import EventStore, FindsLatest, ListsNewest, SessionSummary


async def newest_sessions(store: EventStore, count: int) -> list[SessionSummary]:
    """The ``count`` most recently created sessions (by ``createdAt``, then id) and every
    descendant of them, each once, ordered like ``list_sessions``: a store that
    ``ListsNewest`` (SQLite, PostgreSQL, JSONL) reads only those; any other lists every session."""
    if isinstance(store, ListsNewest):
        return await store.newest_sessions(count)
    summaries = sorted(await store.list_sessions(), key=lambda s: (s.header.created_at, s.header.id))
    wanted = newest_ids([s.header for s in summaries], count)
    return [s for s in summaries if s.header.id in wanted]


class Ranked(Protocol):
    """What :func:`newest_ids` reads of a session: a ``SessionHeader``, or the facts a JSONL
    directory keeps of one (``dsh.store.jsonl_kept.Facts``)."""

    @property
    def id(self) -> str:
        """The session's id."""
        ...

    @property
    def created_at(self) -> int:
        """When it was created (ms): the listing's order, then the id."""
        ...

    @property
    def parent_session(self) -> str | None:
        """The session it is listed under (``None``: a top row)."""
        ...


_RANK = attrgetter("created_at", "id")
"""Creation, then id: the order of a listing."""


def newest_ids(headers: Sequence[Ranked], count: int, *, roots: bool = False) -> set[str]:
    """The ids of the ``count`` most recently created sessions of ``headers`` (by ``createdAt``,
    then id) — ``roots``: of their *top rows* only (no parent, itself as parent, or a parent not
    among ``headers``) — and of every session under them (``parentSession`` links, each once)."""
    ordered = sorted(headers, key=_RANK)
    kids: dict[str, list[str]] = {}
    for h in ordered:
        if (parent := h.parent_session) is not None:
            kids.setdefault(parent, []).append(h.id)
    tops = ordered
    if roots:
        stored = {h.id for h in ordered}
        tops = [h for h in ordered if (p := h.parent_session) is None or p == h.id or p not in stored]
    newest = tops[-count:] if count > 0 else []
    return {sid for h in newest for sid in below(h.id, lambda p: kids.get(p, ()))}


async def last_activity(store: EventStore, summary: SessionSummary) -> int:
    """The time of the session's last event (its creation time when it has none)."""
    if summary.event_count == 0:
        return summary.header.created_at
    if summary.last_time is not None:  # read with the listing
        return summary.last_time
    last = await store.read_from(summary.header.id, summary.event_count - 1)
    return last[-1].time if last else summary.header.created_at


async def latest_top_level(store: EventStore, cwd: str) -> str | None:
    """The session ``--continue`` takes in ``cwd`` (:func:`latest_listed`): a store that
    ``FindsLatest`` (SQLite, PostgreSQL, JSONL) finds it without listing every session."""
    if isinstance(store, FindsLatest):
        return await store.latest_top_level(cwd)
    return await latest_listed(store, cwd)


async def latest_listed(store: EventStore, cwd: str) -> str | None:
    """Of the sessions recorded in ``cwd`` that no agent started as its subagent (a user's
    branch included), the one with the latest activity (:func:`last_activity`), then the
    latest created, then the greatest id — found in the whole listing; ``None`` when none is."""
    best: tuple[int, int, str] | None = None
    for s in await store.list_sessions():
        if not s.header.is_subagent and s.header.cwd == cwd:
            key = (await last_activity(store, s), s.header.created_at, s.header.id)
            best = key if best is None or key > best else best
    return None if best is None else best[2]

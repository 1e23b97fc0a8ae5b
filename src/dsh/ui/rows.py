"""A listing's rows: each session's summary with what its events say (``Derived``), read from
the store's kept digests when it keeps them — shared by ``dsh sessions list`` and the viewer.

Light on purpose: reading kept digests imports neither the timeline fold nor the price
table; a session whose digest is missing or stale is derived (the fold is loaded then).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dsh import jsonx
from dsh.errors import StoreError
from dsh.events import Event
from dsh.session.digest import Derived, derive, digest_from_json, digest_json, session_json
from dsh.store.base import EventStore, KeepsDigests, SessionSummary

if TYPE_CHECKING:
    from dsh.session.bill import Bill
    from dsh.session.spend import RowSpend


def summary_json(summary: SessionSummary) -> dict[str, Any]:
    """The session object of ``dsh sessions list --json`` (same keys, same values)."""
    return session_json(summary.header, summary.inherited_event_count, summary.event_count)


def child_counts(summaries: Sequence[SessionSummary]) -> dict[str, int]:
    """How many of ``summaries`` name each session as their parent (a listing's children column)."""
    counts: dict[str, int] = {}
    for s in summaries:
        parent = s.header.parent_session
        if parent is not None:
            counts[parent] = counts.get(parent, 0) + 1
    return counts


SURFACE_FROM = 1_000
"""Sessions of more events than this are derived from a surface read (:meth:`DeriveCache._events`)."""


class DeriveCache:
    """``Derived`` per session, recomputed only when the session's event count changes.

    Over a store that keeps digests (``KeepsDigests``: SQLite), :meth:`prime` reads the kept
    ones, so a listing derives only sessions that changed since, and :meth:`flush` keeps what
    it derived (a digest whose status a clock can change is never kept)."""

    def __init__(
        self, store: EventStore, limit: int = 50_000, *, price: Callable[[Bill], Bill] | None = None
    ) -> None:
        self.store = store
        self.limit = limit
        self.price = price
        """``PriceTable.keeping_cost``: what a listing that prices its rows keeps in each digest."""
        self._cache: dict[str, tuple[int, Derived]] = {}
        self._kept: dict[str, tuple[int, bytes]] = {}
        self._new: list[tuple[str, int, bytes]] = []
        self._primed = False
        self._asked: set[str] = set()

    async def prime(self, ids: Sequence[str] | None = None) -> None:
        """Read the store's kept digests of ``ids`` (``None``: every one, once; nothing for a
        store that keeps none): a page reads only the digests of the rows it shows."""
        if self._primed or not isinstance(self.store, KeepsDigests):
            return
        if ids is None:
            self._kept = await self.store.kept_digests()
            self._primed = True
            return
        wanted = [sid for sid in ids if sid not in self._asked]
        if wanted:
            self._kept.update(await self.store.kept_digests(wanted))
            self._asked.update(wanted)

    async def flush(self) -> None:
        """Keep the digests derived since the last flush (best effort: a cache that cannot be
        written, say a read-only database, is only slower next time)."""
        new, self._new = self._new, []
        if new and isinstance(self.store, KeepsDigests):
            with contextlib.suppress(StoreError):
                await self.store.keep_digests(new)

    async def get(self, summary: SessionSummary) -> Derived:
        sid = summary.header.id
        hit = self._cache.get(sid)
        if hit is not None and hit[0] == summary.event_count and hit[1].status != "running":
            return hit[1]
        kept = self._kept.get(sid)
        if kept is not None and kept[0] == summary.event_count:
            value = digest_from_json(jsonx.loads(kept[1]))
            if value is not None:
                priced = self._priced(value)
                if priced is not value:  # kept again, with its cost
                    self._keep(sid, kept[0], priced)
                return priced
        events = await self._events(summary)
        value = self._priced(derive(summary.header, events, summary.inherited_event_count))
        if len(self._cache) >= self.limit:
            self._cache.clear()
        self._cache[sid] = (len(events), value)
        self._keep(sid, len(events), value)
        return value

    async def _events(self, summary: SessionSummary) -> Sequence[Event]:
        """The events a digest is derived from: a long session's without their streams (no
        digest reads a delta, and the streams are most of a long log's bytes: a surface read,
        ``EventStore.load(streams=False)``), a short one's as the store serves a tail (SQLite:
        on the caller's thread, without a hop to its worker)."""
        sid = summary.header.id
        if summary.event_count > SURFACE_FROM:
            return (await self.store.load(sid, streams=False)).events
        return await self.store.read_from(sid, 0)

    def _priced(self, value: Derived) -> Derived:
        bill = value.bill if self.price is None else self.price(value.bill)
        return value if bill is value.bill else replace(value, bill=bill)

    def _keep(self, sid: str, count: int, value: Derived) -> None:
        keep = digest_json(value)
        if keep is not None:
            self._new.append((sid, count, jsonx.dumps_unchecked(keep)))


@dataclass(frozen=True, slots=True)
class Row:
    summary: SessionSummary
    derived: Derived
    children: int
    depth: int = 0
    """How deep under its listed parent the row is nested (0: shown at the top level)."""

    def to_json(self, spend: RowSpend | None = None) -> dict[str, Any]:
        """The row's JSON (``spend``: its own and its tree's tokens and cost, when priced)."""
        d = self.derived
        priced = spend.to_json() if spend is not None else {}
        return {
            **summary_json(self.summary),
            "title": d.title,
            "firstPrompt": d.first_prompt,
            "model": d.model,
            "lastActivity": d.last_activity,
            "status": d.status,
            "children": self.children,
            "compactions": d.compactions,
            **priced,
        }

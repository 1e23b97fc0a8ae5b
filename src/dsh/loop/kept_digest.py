"""The session's listing digest kept with its log: written by the agent that writes the session.

``dsh sessions list``, ``tree`` and the viewer read a digest per session (``dsh.session.digest``:
title, status, model, usage …) that a store which ``KeepsDigests`` (SQLite) keeps beside the
log, valid for the event count it was derived at. :class:`KeptDigest` keeps it as the session is
written, so a listing after a run finds it instead of folding the log: when the agent closes
(``Agent.aclose``), or when a turn run piece by piece ends (``StepwiseTurn.end``: Temporal's
agents live for one piece, and only the last one keeps it), if the agent appended anything. It
feeds the events appended since the last time into a timeline fold it holds and keeps the digest
when its status no clock can change — once per agent, not per turn (a turn's durable appends
stay two: W1-loop). The whole log is folded once per agent, so an agent attached to a log longer
than :data:`FOLD_AT_MOST` events keeps none (the fold costs about 4 µs an event of dsh's shape:
0.4 s at 100,000, 2026-12-08); a listing derives that session's digest when it needs it. Best
effort: a store that refuses it is only slower to list.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from dsh import jsonx
from dsh.errors import StoreError
from dsh.session import Session
from dsh.session.digest import digest_json, digest_of
from dsh.store.base import EventStore, KeepsDigests

if TYPE_CHECKING:
    from dsh.session.timeline import Timeline

FOLD_AT_MOST: Final = 10_000
"""The longest log an agent folds at its first :meth:`KeptDigest.keep` (see the module docstring)."""


class KeptDigest:
    """The digest of ``session`` kept in ``store`` (see the module docstring); ``flush`` makes
    the appended events durable first (a digest is never kept ahead of its log)."""

    def __init__(self, store: EventStore, session: Session, flush: Callable[[], Awaitable[None]]) -> None:
        self._store = store
        self._session = session
        self._flush = flush
        self._timeline: Timeline | None = None
        self._fed = 0
        self._skipped = False
        self._attached_at = len(session.events)
        self.at_close = True
        """Kept when the agent closes (``False``: a piece of a turn, which keeps it at the end)."""

    async def keep(self) -> None:
        """Fold what was appended since the last call and keep the digest (when it may be kept);
        a store error leaves the digest to the next listing."""
        store = self._store
        if not isinstance(store, KeepsDigests) or self._skipped:
            return
        session = self._session
        if len(session.events) in (self._attached_at, self._fed):
            return  # nothing written since: the store's digest, if any, still holds
        if self._timeline is None and len(session.events) > FOLD_AT_MOST:
            self._skipped = True
            return
        try:
            await self._flush()
        except StoreError:
            return
        sid = session.id
        if self._timeline is None:
            from dsh.session.timeline import Timeline  # the fold is loaded only where it is kept

            self._timeline = Timeline()
            self._timeline.begin(sid, cut=session.inherited_event_count, header=session.header)
        events = session.events
        for event in events[self._fed :]:
            self._timeline.feed(sid, event)
        self._fed = len(events)
        kept = digest_json(digest_of(session.header, self._timeline.state(sid)))
        if kept is not None:
            with contextlib.suppress(StoreError):
                await store.keep_digests([(sid, len(events), jsonx.dumps_unchecked(kept))])

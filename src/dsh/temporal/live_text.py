"""What ``dsh run --temporal`` feeds its output: the turn's events from the store's tail and,
between them, the deltas a worker spools while a model call streams (``dsh.temporal.spooling``).

:class:`LiveTurn` puts the two sources in the order the in-process loop feeds them — a model
call's deltas after the events logged before the call, before its settlement — and shows each
delta once: a spooled batch is shown only from the delta it has not shown yet; when the
call's settlement arrives, the deltas it holds beyond those shown are fed first (so a turn
streams whole even when the spool showed nothing: a store without one, a poll that came too
late), then the settlement itself.

A call asked again — its worker was lost mid-stream and the step is retried elsewhere under
a new stream id, or the shown deltas are not the start of what the settlement holds — is a
*restart*: ``restarted()`` is called once (``dsh run`` ends the line, ``--json`` writes a
``delta-restart`` line), then the new attempt's deltas are shown from its start; the lost
attempt's later batches are ignored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.payloads import stream_of
from dsh.events.vocabulary import ASSISTANT_ATTEMPT, ASSISTANT_MESSAGE
from dsh.loop import Feed
from dsh.store.spool import SPOOLED_TYPES, SpoolBatch, Spooled, SpoolingStore

POLL_EVERY: Final = 0.05
"""Seconds between two reads of the spool."""
SETTLEMENTS: Final = frozenset({ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT})


@dataclass(slots=True)
class _Shown:
    """The stream being shown: its id and the deltas fed so far."""

    stream: str
    deltas: list[Chunk] = field(default_factory=list)
    gap: bool = False
    """A batch was missed (written while another was read, dropped early): nothing more is
    shown from the spool; the settlement feeds the rest."""


class LiveTurn:
    """Feeds ``feed`` one session's events (:meth:`event`) and spooled deltas (:meth:`batches`)."""

    def __init__(self, session_id: str, feed: Feed, from_seq: int, restarted: Callable[[], None]) -> None:
        self._sid = session_id
        self._feed = feed
        self._restarted = restarted
        self._next_seq = from_seq
        """The seq of the next event the tail delivers."""
        self._settled_at = from_seq - 1
        """A stream that began at or before this seq is settled (or older than the turn)."""
        self._shown: _Shown | None = None
        self._dropped: set[str] = set()
        self._waiting: list[SpoolBatch] = []
        """Batches of a stream that began after the events delivered so far."""

    def event(self, event: Event) -> None:
        """The tail's next event (a settlement first feeds the deltas not shown yet)."""
        if event.type in SETTLEMENTS:
            self._settle(event)
        self._feed.event(self._sid, event)
        self._next_seq = event.seq + 1
        waiting, self._waiting = self._waiting, []
        for batch in waiting:
            self._batch(batch)

    def batches(self, rows: Sequence[Spooled]) -> None:
        """Spooled batches, in writing order."""
        for row in rows:
            self._batch(row.batch)

    def _batch(self, batch: SpoolBatch) -> None:
        if batch.at <= self._settled_at or batch.stream in self._dropped:
            return
        if batch.at > self._next_seq:
            self._waiting.append(batch)
            return
        shown = self._shown
        if shown is None or shown.stream != batch.stream:
            if shown is not None:  # the call asked again: the attempt shown is void
                self._dropped.add(shown.stream)
                if shown.deltas:
                    self._restarted()
            shown = self._shown = _Shown(batch.stream)
        if shown.gap or batch.first > len(shown.deltas):
            shown.gap = True
            return
        for chunk in batch.chunks[len(shown.deltas) - batch.first :]:
            shown.deltas.append(chunk)
            self._feed.chunk(self._sid, chunk)

    def _settle(self, event: Event) -> None:
        record = stream_of(event)
        deltas = [c for c in (record["chunks"] if record else []) if c["type"] in SPOOLED_TYPES]
        shown = self._shown.deltas if self._shown is not None else []
        if deltas[: len(shown)] == shown:
            rest = deltas[len(shown) :]
        else:
            self._restarted()
            rest = deltas
        for chunk in rest:
            self._feed.chunk(self._sid, chunk)
        if self._shown is not None:
            self._dropped.add(self._shown.stream)
        self._shown = None
        self._settled_at = event.seq


async def follow_spool(store: SpoolingStore, session_id: str, live: LiveTurn) -> None:
    """Read the session's spool every :data:`POLL_EVERY` seconds into ``live`` until cancelled."""
    cursor = 0
    while True:
        rows = await store.spooled(session_id, cursor)
        if rows:
            cursor = rows[-1].cursor
            live.batches(rows)
        await asyncio.sleep(POLL_EVERY)

"""A model step's live deltas, spooled in batches to the shared store for ``dsh run --temporal``.

A worker's model step streams inside an activity, in another process than the client that
submitted the turn; the deltas are not events (the log gets the whole stream with the
settlement) and must not travel through the workflow history. So the activity's agent feed
writes its session's text and reasoning deltas to the store's live spool
(``dsh.store.spool``), the one place every worker of a queue and the client share: at most
one write per :data:`FLUSH_EVERY` (or per :data:`FLUSH_AT` deltas), one stream id per model
call attempt, ``at`` the seq its settlement will take. When the call's settlement is logged,
its batches (and any older stream's a lost worker left) are dropped. Spooling is best
effort: a store without the capability spools nothing, a failed write stops it for the rest
of the step (one warning) and never fails the step.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from dsh.errors import DshError
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.vocabulary import ASSISTANT_ATTEMPT, ASSISTANT_MESSAGE
from dsh.loop import Agent
from dsh.store import EventStore
from dsh.store.spool import SPOOLED_TYPES, SpoolBatch, SpoolingStore

FLUSH_EVERY: Final = 0.05
"""Seconds the first delta of a batch waits for more before the batch is written."""
FLUSH_AT: Final = 64
"""Deltas that make a batch be written at once."""
SETTLEMENTS: Final = frozenset({ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT})

log = logging.getLogger(__name__)


class StreamSpool:
    """Feed listeners of one agent's session and the writer task that spools what they saw."""

    def __init__(self, store: SpoolingStore, agent: Agent) -> None:
        self._store = store
        self._agent = agent
        self._sid = agent.session.id
        self._stream: str | None = None
        self._at = 0
        self._sent = 0
        self._pending: list[Chunk] = []
        self._drop: int | None = None
        self._closing = False
        self._broken = False
        self._wake = asyncio.Event()

    def chunk(self, session_id: str, chunk: Chunk) -> None:
        """A live chunk: its session's deltas join the open stream (a first one opens it)."""
        if session_id != self._sid or chunk["type"] not in SPOOLED_TYPES or self._broken:
            return
        if self._stream is None:
            self._stream = uuid.uuid4().hex
            self._at = self._agent.session.next_seq
            self._sent = 0
        self._pending.append(chunk)
        self._wake.set()

    def event(self, session_id: str, event: Event) -> None:
        """A settlement closes the stream: what it spooled is dropped (the log holds it now)."""
        if session_id != self._sid or event.type not in SETTLEMENTS:
            return
        self._pending.clear()
        self._stream = None
        self._drop = event.seq
        self._wake.set()

    def close(self) -> None:
        self._closing = True
        self._wake.set()

    async def run(self) -> None:
        """Write batches and drops until :meth:`close`; a store error stops spooling."""
        while not (self._closing and not self._pending and self._drop is None):
            await self._wake.wait()
            self._wake.clear()
            if self._pending and len(self._pending) < FLUSH_AT and not self._closing:
                await asyncio.sleep(FLUSH_EVERY)
            try:
                await self._write()
            except DshError as exc:
                log.warning("live spool of session %s stopped: %s", self._sid, exc)
                self._broken = True
                self._pending.clear()
                self._drop = None

    async def _write(self) -> None:
        if self._pending and self._stream is not None:
            batch = SpoolBatch(self._stream, self._at, self._sent, tuple(self._pending))
            self._sent += len(batch.chunks)
            self._pending.clear()
            await self._store.spool(self._sid, batch)
        if self._drop is not None:
            through, self._drop = self._drop, None
            await self._store.unspool(self._sid, through)


@asynccontextmanager
async def spooling(agent: Agent, store: EventStore) -> AsyncIterator[None]:
    """While the block runs, ``agent``'s session's deltas are spooled (see the module)."""
    if not isinstance(store, SpoolingStore):
        yield
        return
    spool = StreamSpool(store, agent)
    agent.feed.on_chunk(spool.chunk)
    agent.feed.on_event(spool.event)
    async with asyncio.TaskGroup() as group:
        group.create_task(spool.run())
        try:
            yield
        finally:
            agent.feed.off_chunk(spool.chunk)
            agent.feed.off_event(spool.event)
            spool.close()

"""Streaming text for the live view: model chunks from an in-process ``Feed``, fanned out to SSE streams.

A run in the same process (or one that forwards its feed) hands its :class:`~dsh.loop.Feed`
to ``create_app(feed=...)``. Text and reasoning deltas of each session go to every live
stream of that session; the listener may be called from any thread.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass, field

from dsh.events.chunks import Chunk
from dsh.loop import Feed

DELTA_TYPES = frozenset({"text-delta", "reasoning-delta"})


@dataclass(slots=True)
class ChunkHub:
    """Session id → the queues of its open live streams."""

    loop: asyncio.AbstractEventLoop | None = None
    queues: dict[str, set[asyncio.Queue[tuple[str, object]]]] = field(default_factory=dict)

    def attach(self, feed: Feed, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        feed.on_chunk(self.chunk)

    def subscribe(self, session_id: str, queue: asyncio.Queue[tuple[str, object]]) -> None:
        self.queues.setdefault(session_id, set()).add(queue)

    def unsubscribe(self, session_id: str, queue: asyncio.Queue[tuple[str, object]]) -> None:
        self.queues.get(session_id, set()).discard(queue)

    def chunk(self, session_id: str, chunk: Chunk) -> None:
        """Feed listener: quick, never raises, thread-safe."""
        if self.loop is None or chunk.get("type") not in DELTA_TYPES or not self.queues.get(session_id):
            return
        text = chunk.get("text")
        if not isinstance(text, str):
            return
        delta = {"kind": "reasoning" if chunk["type"] == "reasoning-delta" else "text", "text": text}
        with suppress(RuntimeError):  # the server's loop is closed
            self.loop.call_soon_threadsafe(self._put, session_id, delta)

    def _put(self, session_id: str, delta: dict[str, str]) -> None:
        for queue in list(self.queues.get(session_id, ())):
            queue.put_nowait(("delta", delta))

"""The in-process live feed: events and stream chunks of every session, for UIs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dsh.events import Event
from dsh.events.chunks import Chunk

EventListener = Callable[[str, Event], None]
ChunkListener = Callable[[str, Chunk], None]


@dataclass(slots=True)
class Feed:
    """Listeners get ``(session_id, event)`` after each append and ``(session_id, chunk)``
    for each live chunk. A parent and its subagents share one feed, so a UI sees the tree.
    Listeners must be quick and must not raise.
    """

    event_listeners: list[EventListener] = field(default_factory=list)
    chunk_listeners: list[ChunkListener] = field(default_factory=list)

    def on_event(self, listener: EventListener) -> None:
        self.event_listeners.append(listener)

    def on_chunk(self, listener: ChunkListener) -> None:
        self.chunk_listeners.append(listener)

    def off_event(self, listener: EventListener) -> None:
        """Remove ``listener`` (added by :meth:`on_event`); absent is fine."""
        if listener in self.event_listeners:
            self.event_listeners.remove(listener)

    def off_chunk(self, listener: ChunkListener) -> None:
        """Remove ``listener`` (added by :meth:`on_chunk`); absent is fine."""
        if listener in self.chunk_listeners:
            self.chunk_listeners.remove(listener)

    def event(self, session_id: str, event: Event) -> None:
        for listener in self.event_listeners:
            listener(session_id, event)

    def chunk(self, session_id: str, chunk: Chunk) -> None:
        for listener in self.chunk_listeners:
            listener(session_id, chunk)

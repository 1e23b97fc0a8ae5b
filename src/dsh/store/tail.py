"""Live tailing of one session: its stored events, then new ones as another process appends them.

:func:`follow` works with every ``EventStore``. A store that can push wake-ups (one with a
``listen(session_id)`` method, see :class:`ListeningStore`; PostgreSQL's ``LISTEN/NOTIFY``)
is waited on, with a slow poll as a safety net; every other store (SQLite, JSONL, memory)
is polled with ``read_from`` every ``poll_interval`` seconds. Only committed events are
seen: a writer's ``durable=False`` buffer shows up when that writer flushes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Final, Protocol, runtime_checkable

from dsh.events import Event
from dsh.events.vocabulary import TURN_END, TURN_START
from dsh.store.base import EventStore

DEFAULT_POLL_INTERVAL: Final = 0.15
"""Seconds between ``read_from`` polls on stores that cannot push wake-ups."""

LISTEN_SAFETY_POLL: Final = 2.0
"""Seconds a listening follower waits for a wake-up before reading anyway."""


class Listener(Protocol):
    """Wake-ups for one session's appends."""

    async def wait(self, max_wait: float) -> bool:
        """Return ``True`` as soon as the session may have new events, ``False`` after ``max_wait``."""
        ...


@runtime_checkable
class ListeningStore(Protocol):
    """The optional capability of a store that can push append notifications."""

    def listen(self, session_id: str) -> AbstractAsyncContextManager[Listener]:
        """Start listening (before reading, so nothing between the read and the wait is missed)."""
        ...


class TurnTracker:
    """Counts open turns; says when a ``turn/end`` leaves none open."""

    __slots__ = ("open_turns",)

    def __init__(self) -> None:
        self.open_turns = 0

    def feed(self, event: Event) -> bool:
        """Account for ``event``; ``True`` when it is a ``turn/end`` that leaves no open turn."""
        if event.type == TURN_START:
            self.open_turns += 1
        elif event.type == TURN_END:
            self.open_turns = max(self.open_turns - 1, 0)
            return self.open_turns == 0
        return False


async def _batches(
    store: EventStore, session_id: str, from_seq: int, poll_interval: float
) -> AsyncGenerator[Sequence[Event], None]:
    """The events stored from ``from_seq`` on (possibly none), then each non-empty batch of
    newer events as it is committed, forever."""
    if isinstance(store, ListeningStore):
        async with store.listen(session_id) as listener:
            async for batch in _poll(store, session_id, from_seq, lambda: listener.wait(LISTEN_SAFETY_POLL)):
                yield batch
    else:
        async for batch in _poll(store, session_id, from_seq, lambda: asyncio.sleep(poll_interval)):
            yield batch


async def _poll(
    store: EventStore, session_id: str, from_seq: int, wait: Callable[[], Awaitable[object]]
) -> AsyncGenerator[Sequence[Event], None]:
    """Read from ``from_seq`` on: the first batch (possibly empty), then each non-empty one,
    calling ``wait`` between reads."""
    next_seq = from_seq
    first = True
    while True:
        batch = await store.read_from(session_id, next_seq)
        if batch or first:
            first = False
            next_seq += len(batch)
            yield batch
        await wait()


async def follow(
    store: EventStore,
    session_id: str,
    from_seq: int = 0,
    *,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    until_turn_end: bool = True,
) -> AsyncGenerator[Event, None]:
    """Yield the session's events from ``from_seq`` on, then each new one as it is committed.

    With ``until_turn_end`` the iteration ends right after a live ``turn/end`` that leaves no
    open turn: the turn running when following started, or else the next one. (Events
    already stored when following started never end it.) Without it, it runs until the
    caller stops iterating or is cancelled. A missing session raises
    :class:`~dsh.errors.SessionNotFoundError`.
    """
    tracker = TurnTracker()
    live_from: int | None = None
    batches = _batches(store, session_id, from_seq, poll_interval)
    try:
        async for batch in batches:
            if live_from is None:  # the first batch: what was stored when following started
                live_from = from_seq + len(batch)
            for event in batch:
                ended = tracker.feed(event)
                yield event
                if until_turn_end and ended and event.seq >= live_from:
                    return
    finally:
        await batches.aclose()

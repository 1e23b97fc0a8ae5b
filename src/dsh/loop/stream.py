"""``Agent.stream``: one turn as an async iterator of typed events, from the agent's feed.

The events are what a UI shows: text and reasoning deltas as the model streams them, each
tool call when it is logged and its result when it settles, a subagent child's start (its
``subagent/descriptor``) and end (its ``turn/end``), and last :class:`TurnFinished` with
the turn's :class:`~dsh.loop.agent.TurnResult`. Every event names its ``session_id``: the
agent's own, or a descendant's. Nothing here writes to the log; the events are a view of
what the loop appended.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass

from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.loop.feed import Feed
from dsh.loop.result import TurnResult
from dsh.session import timeline as tl
from dsh.session.timeline import Timeline


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the assistant's answer."""

    session_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning (models that think aloud)."""

    session_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call, logged before it runs; ``arguments`` is the model's raw JSON text."""

    session_id: str
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool call's result as the model will see it."""

    session_id: str
    call_id: str
    text: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class ChildStarted:
    """A subagent child started its turn: ``kind`` is ``spawn`` or ``fork``."""

    session_id: str
    parent_id: str
    call_id: str
    kind: str
    label: str


@dataclass(frozen=True, slots=True)
class ChildFinished:
    """A subagent child's turn ended (``reason`` is its ``turn/end`` kind)."""

    session_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The streamed turn ended; always the last event."""

    result: TurnResult

    @property
    def session_id(self) -> str:
        return self.result.session_id


StreamEvent = (
    TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallFinished
    | ChildStarted
    | ChildFinished
    | TurnFinished
)
"""Every event :meth:`Agent.stream` yields."""


class _Tree:
    """Which sessions belong to the streamed agent (itself and the children it starts), and
    the public events of the timeline items they make: a filter over ``Item``s."""

    def __init__(self, root: str) -> None:
        self.ids = {root}
        self.children: set[str] = set()
        self.timeline = Timeline()

    def event(self, session_id: str, event: Event) -> StreamEvent | None:
        for item in self.timeline.feed(session_id, event):
            public = self._public(session_id, item)
            if public is not None:
                return public
        return None

    def _public(self, session_id: str, item: tl.Item) -> StreamEvent | None:
        if isinstance(item, tl.ChildStarted):
            parent = item.parent
            if parent is None or parent not in self.ids:
                return None
            self.ids.add(session_id)
            self.children.add(session_id)
            return ChildStarted(session_id, parent, item.call_id or "", item.provider_kind, item.label or "")
        if session_id not in self.ids:
            return None
        if isinstance(item, tl.ToolCall):
            return ToolCallStarted(session_id, item.call_id, item.name, item.arguments)
        if isinstance(item, tl.ToolResult):
            return ToolCallFinished(session_id, item.call_id, item.text, item.is_error)
        if isinstance(item, tl.ChildEnded) and session_id in self.children:
            return ChildFinished(session_id, item.reason or "")
        return None

    def chunk(self, session_id: str, chunk: Chunk) -> StreamEvent | None:
        delta = self.timeline.chunk(session_id, chunk)
        if delta is None or session_id not in self.ids:
            return None
        return (
            TextDelta(session_id, delta.text)
            if delta.kind == "text"
            else ReasoningDelta(session_id, delta.text)
        )


async def stream_turn(
    feed: Feed, session_id: str, run: Callable[[], Awaitable[TurnResult]]
) -> AsyncGenerator[StreamEvent, None]:
    """Run ``run()`` (one turn of ``session_id``) and yield its events as they are appended.

    Closing the iterator early cancels the turn (the log is closed ``aborted`` as on any
    cancellation): ``async with contextlib.aclosing(agent.stream(p)) as events:`` closes it
    at once; a plain ``break`` leaves that to the generator's finalizer. An exception of
    the turn is raised after the events before it.
    """
    queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
    tree = _Tree(session_id)

    def on_event(sid: str, event: Event) -> None:
        item = tree.event(sid, event)
        if item is not None:
            queue.put_nowait(item)

    def on_chunk(sid: str, chunk: Chunk) -> None:
        item = tree.chunk(sid, chunk)
        if item is not None:
            queue.put_nowait(item)

    async def turn() -> TurnResult:
        try:
            return await run()
        finally:
            queue.put_nowait(None)

    feed.on_event(on_event)
    feed.on_chunk(on_chunk)
    task = asyncio.ensure_future(turn())
    try:
        while (item := await queue.get()) is not None:
            yield item
        yield TurnFinished(await task)
    finally:
        feed.off_event(on_event)
        feed.off_chunk(on_chunk)
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

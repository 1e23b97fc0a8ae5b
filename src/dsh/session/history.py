"""Incremental projection of a log onto the model-visible message history (rule: ``dsh.events.history``)."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import Event
from dsh.events.history import Surface
from dsh.events.messages import Message
from dsh.events.sparse import without_chunk_runs


class HistoryProjector:
    """Caches the projection and only looks at events appended since the last call.

    The history is a pure function of the log; each event is folded once, so the per-step
    cost does not grow with the session (a replace — a compaction — rebuilds the list).
    """

    __slots__ = ("_messages", "_seen", "surface")

    def __init__(self) -> None:
        self.surface = Surface()
        """The surface folded so far (its nodes' seqs and messages)."""
        self._messages: list[Message] = []
        self._seen = 0

    def fold(self, events: Sequence[Event]) -> Surface:
        """The surface of ``events`` (which must extend the events seen before)."""
        if len(events) < self._seen:
            self.surface = Surface()
            self._messages = []
            self._seen = 0
        surface = self.surface
        added = surface.fold(without_chunk_runs(events, self._seen))  # a run's chunks have no surfaceOp
        if added is None:  # a replace (a compaction) rebuilt the surface
            self._messages = surface.history()
        else:
            self._messages += added
        self._seen = len(events)
        return surface

    def messages(self, events: Sequence[Event]) -> list[Message]:
        """The history for ``events`` (which must extend the events seen before)."""
        self.fold(events)
        return list(self._messages)

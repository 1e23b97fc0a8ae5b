"""Incremental projection of a log onto the model-visible message history (rule: ``dsh.events.history``)."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import Event
from dsh.events.history import project_event
from dsh.events.messages import Message


class HistoryProjector:
    """Caches the projection and only looks at events appended since the last call.

    The history is a pure function of the log; each event is projected once, so the
    per-step cost does not grow with the session.
    """

    __slots__ = ("_messages", "_seen")

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._seen = 0

    def messages(self, events: Sequence[Event]) -> list[Message]:
        """The history for ``events`` (which must extend the events seen before)."""
        if len(events) < self._seen:
            self._messages = []
            self._seen = 0
        for i in range(self._seen, len(events)):
            message = project_event(events[i])
            if message is not None:
                self._messages.append(message)
        self._seen = len(events)
        return list(self._messages)

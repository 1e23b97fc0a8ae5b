"""Incremental projection of a log onto the model-visible message history."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import Event
from dsh.events.messages import Message
from dsh.events.vocabulary import ASSISTANT_MESSAGE, TOOL_RESULT, USER_MESSAGE


def project_event(event: Event) -> Message | None:
    """The message an ``append`` surface event contributes, or ``None``."""
    if event.surface_op != "append":
        return None
    if event.type == USER_MESSAGE:
        return event.data  # type: ignore[no-any-return]
    if event.type == ASSISTANT_MESSAGE:
        message = event.data.get("message")
        if not message or not message.get("content"):
            return None
        return message  # type: ignore[no-any-return]
    if event.type == TOOL_RESULT:
        return event.data.get("message")  # type: ignore[no-any-return]
    return None


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

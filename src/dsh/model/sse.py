"""Incremental Server-Sent Events decoding: raw response bytes in, ``data`` events out.

Follows the SSE rules providers rely on: lines end in ``\\n``, ``\\r\\n`` or ``\\r`` (also
when a ``\\r\\n`` pair is split across reads), a blank line dispatches the event, several
``data:`` lines join with ``\\n``, one leading space after the colon is dropped, comment
lines (``: keep-alive``) and ``id``/``retry`` fields never become events. Leniency: an event
still pending when the body ends is dispatched (a final ``data: [DONE]`` without its blank
line still counts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EOL = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its joined ``data`` and its ``event`` type (``""`` if none)."""

    data: str
    event: str = ""


class SseDecoder:
    """Feed byte chunks in order; get complete events. ``close()`` at end of body.

    Raises ``UnicodeDecodeError`` (a ``ValueError``) for a line that is not UTF-8.
    """

    __slots__ = ("_buffer", "_data", "_event", "comments")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []
        self._event = ""
        self.comments = 0
        """Comment lines seen (keep-alives)."""

    def feed(self, data: bytes) -> list[SseEvent]:
        self._buffer += data
        events: list[SseEvent] = []
        while True:
            match = _EOL.search(self._buffer)
            if match is None:
                break
            if match.group() == b"\r" and match.end() == len(self._buffer):
                break  # maybe the first half of a "\r\n" split across reads
            line = bytes(self._buffer[: match.start()])
            del self._buffer[: match.end()]
            event = self._line(line.decode("utf-8"))
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SseEvent]:
        """End of body: flush a trailing unterminated line and a pending event."""
        events: list[SseEvent] = []
        if self._buffer:
            line = bytes(self._buffer).rstrip(b"\r")
            self._buffer.clear()
            event = self._line(line.decode("utf-8"))
            if event is not None:
                events.append(event)
        event = self._line("")
        if event is not None:
            events.append(event)
        return events

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = SseEvent("\n".join(self._data), self._event)
            self._data, self._event = [], ""
            return event
        if line.startswith(":"):
            self.comments += 1
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

"""Incremental Server-Sent Events decoding: raw response bytes in, ``data`` events out.

Follows the SSE rules providers rely on: lines end in ``\\n``, ``\\r\\n`` or ``\\r`` (also
when a ``\\r\\n`` pair is split across reads), a blank line dispatches the event, several
``data:`` lines join with ``\\n``, one leading space after the colon is dropped, comment
lines (``: keep-alive``) and ``id``/``retry`` fields never become events. Leniency: an event
still pending when the body ends is dispatched (a final ``data: [DONE]`` without its blank
line still counts).

Each byte is scanned for a line break once: a read only searches the bytes it added (so a
20 MB event arriving in 16 KiB reads costs linear time, not a rescan of the whole buffer
per read).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its joined ``data`` and its ``event`` type (``""`` if none)."""

    data: str
    event: str = ""


class SseDecoder:
    """Feed byte chunks in order; get complete events. ``close()`` at end of body.

    Raises ``UnicodeDecodeError`` (a ``ValueError``) for a line that is not UTF-8.
    """

    __slots__ = ("_buffer", "_data", "_event", "_scanned", "comments")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scanned = 0
        """Bytes at the start of ``_buffer`` already known to hold no line break."""
        self._data: list[str] = []
        self._event = ""
        self.comments = 0
        """Comment lines seen (keep-alives)."""

    def feed(self, data: bytes) -> list[SseEvent]:
        buffer = self._buffer
        buffer += data
        end = len(buffer)
        events: list[SseEvent] = []
        start, pos = 0, self._scanned
        newline = -1  # the next "\n" at or after pos (end: none); -1 until searched
        while pos < end:
            if newline < pos:
                newline = buffer.find(b"\n", pos)
                if newline < 0:
                    newline = end
            cr = buffer.find(b"\r", pos, newline)
            if cr >= 0:
                if cr + 1 == end:
                    pos = cr  # maybe the first half of a "\r\n" split across reads
                    break
                line_end, pos = cr, cr + 2 if buffer[cr + 1] == 0x0A else cr + 1
            elif newline < end:
                line_end, pos = newline, newline + 1
            else:
                pos = end
                break
            event = self._line(buffer[start:line_end].decode("utf-8"))
            if event is not None:
                events.append(event)
            start = pos
        del buffer[:start]
        self._scanned = pos - start
        return events

    def close(self) -> list[SseEvent]:
        """End of body: flush a trailing unterminated line and a pending event."""
        events: list[SseEvent] = []
        if self._buffer:
            line = bytes(self._buffer).rstrip(b"\r")
            self._buffer.clear()
            self._scanned = 0
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

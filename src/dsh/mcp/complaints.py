"""What a server sends wrong, said in a few lines: one ``dsh: mcp server 'NAME' …`` line per kind.

A hostile or broken stdio server can write megabytes of lines that are not messages; each
kind of bad message is said once when it first comes (with a short, escaped sample of it),
then only counted: a count line at most every :data:`PERIOD` seconds while more come, and
the rest when the server stops (:meth:`Complaints.flush`). Nothing here raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

Notice = Callable[[str], None]
Kind = Literal["noise", "stray", "unexpected", "malformed"]
PERIOD: Final = 30.0
SAMPLE: Final = 60
_log = logging.getLogger("dsh.mcp")

_SAID: Final[dict[Kind, tuple[str, str, str]]] = {
    "noise": (
        "wrote a line on stdout that is not a JSON-RPC message",
        "line that is not a message",
        "lines that are not messages",
    ),
    "stray": (
        "sent an answer no request is waiting for",
        "answer no request was waiting for",
        "answers no request was waiting for",
    ),
    "unexpected": (
        "sent a message dsh does not take",
        "message dsh does not take",
        "messages dsh does not take",
    ),
    "malformed": ("sent a malformed message", "malformed message", "malformed messages"),
}
"""Each kind: the first line's words, then what the count line counts (one, several)."""


def sample(data: bytes | str) -> str:
    """The start of ``data`` as a quoted ASCII string (controls and non-ASCII escaped: safe on
    a terminal), ``…`` when cut."""
    text = data[: SAMPLE * 4 + 1].decode("utf-8", "replace") if isinstance(data, bytes) else data
    return ascii(text[:SAMPLE]) + ("…" if len(text) > SAMPLE else "")


@dataclass(slots=True)
class _Tally:
    unsaid: int = 0
    said_at: float = 0.0


@dataclass(slots=True)
class Complaints:
    """The complaints about one server (kept across its restarts)."""

    server: str
    notice: Notice | None = None
    clock: Callable[[], float] = time.monotonic
    _tallies: dict[Kind, _Tally] = field(default_factory=dict)

    def _say(self, line: str) -> None:
        try:
            (self.notice or (lambda text: _log.warning("%s", text)))(line)
        except Exception:  # a notice sink must not break the server's reader
            _log.warning("%s", line)

    def __call__(self, kind: Kind, detail: str) -> None:
        """One more message of ``kind`` (``detail``: what it was, said the first time only)."""
        tally = self._tallies.get(kind)
        now = self.clock()
        if tally is None:
            self._tallies[kind] = _Tally(said_at=now)
            said = _SAID[kind][0]
            self._say(f"dsh: mcp server {self.server!r} {said}: {detail} (ignored; more are counted)")
            return
        tally.unsaid += 1
        if now - tally.said_at >= PERIOD:
            self._count(kind, tally, now)

    def _count(self, kind: Kind, tally: _Tally, now: float) -> None:
        counted = _SAID[kind][1 if tally.unsaid == 1 else 2]
        self._say(f"dsh: mcp server {self.server!r}: {tally.unsaid} more {counted} (ignored)")
        tally.unsaid, tally.said_at = 0, now

    def flush(self) -> None:
        """Say the counts not said yet (when the server stops)."""
        now = self.clock()
        for kind, tally in self._tallies.items():
            if tally.unsaid:
                self._count(kind, tally, now)

"""What a scenario's steps wait for, read from the live feed.

Per session: the answers it gave, the highest turn started, the turns ended, whether its
turn is open and whether a ``session/title`` came after its last ``turn/end`` (the original's
condition for a titled session). One look at each event's type: only ``turn/start``,
``turn/end``, ``assistant/message`` and ``session/title`` are read, each by the timeline's own
rule (:mod:`dsh.session.timeline.read`, :func:`dsh.session.timeline.next_open_turn`), so what
this sees is what the fold's items say — without running the whole fold (surface, ledger,
call pairing) per event while a long scenario plays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dsh.events import Event
from dsh.events.vocabulary import ASSISTANT_MESSAGE, SESSION_TITLE, TURN_END, TURN_START
from dsh.session.timeline import next_open_turn, read


@dataclass(slots=True)
class _Session:
    answers: set[str] = field(default_factory=set)
    started: int = 0
    ended: list[int] = field(default_factory=list)
    titled_after_end: bool = False
    open_turn: int | None = None


class Progress:
    """A feed listener (``feed.on_event(progress.event)``) the step player asks."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def _of(self, sid: str) -> _Session:
        return self._sessions.setdefault(sid, _Session())

    def event(self, sid: str, event: Event) -> None:
        seen = self._of(sid)
        etype = event.type
        if etype == ASSISTANT_MESSAGE:
            seen.answers.add(read.answer_text(event))
        elif etype == TURN_START:
            seen.open_turn = next_open_turn(seen.open_turn, event)
            seen.started = max(seen.started, seen.open_turn or 0)
        elif etype == TURN_END:
            seen.open_turn = next_open_turn(seen.open_turn, event)
            seen.ended.append(read.turn_number(event) or 0)
            seen.titled_after_end = False
        elif etype == SESSION_TITLE and read.title_of(event) is not None:
            seen.titled_after_end = True

    def said(self, sid: str, text: str) -> bool:
        """Whether an assistant message of ``sid`` had exactly ``text``."""
        return text in self._of(sid).answers

    def started(self, sid: str) -> int:
        """The highest turn ``sid`` started (0: none)."""
        return self._of(sid).started

    def titled(self, sid: str) -> bool:
        """Whether the last ``session/title`` comes after the last ``turn/end``."""
        seen = self._of(sid)
        return bool(seen.ended) and seen.titled_after_end

    def open(self, sid: str) -> bool:
        """Whether ``sid`` has a turn open."""
        return self._of(sid).open_turn is not None

    def ended(self, sid: str) -> list[int]:
        """The turns ``sid`` ended, in order."""
        return self._of(sid).ended

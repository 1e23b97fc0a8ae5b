"""What a scenario's steps wait for, read from the live feed through the timeline fold.

Per session: the answers it gave, the highest turn started, the turns ended, whether its
turn is open and whether a ``session/title`` came after its last ``turn/end`` (the original's
condition for a titled session). One fold step per event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dsh.events import Event
from dsh.session import timeline as tl
from dsh.session.timeline import Timeline


@dataclass(slots=True)
class _Session:
    answers: set[str] = field(default_factory=set)
    started: int = 0
    ended: list[int] = field(default_factory=list)
    titled_after_end: bool = False


class Progress:
    """A feed listener (``feed.on_event(progress.event)``) the step player asks."""

    def __init__(self) -> None:
        self._timeline = Timeline()
        self._sessions: dict[str, _Session] = {}

    def _of(self, sid: str) -> _Session:
        return self._sessions.setdefault(sid, _Session())

    def event(self, sid: str, event: Event) -> None:
        seen = self._of(sid)
        for item in self._timeline.feed(sid, event):
            if isinstance(item, tl.Answer):
                seen.answers.add(item.text)
            elif isinstance(item, tl.TurnStart):
                seen.started = max(seen.started, item.turn)
            elif isinstance(item, tl.TurnEnd):
                seen.ended.append(item.turn or 0)
                seen.titled_after_end = False
            elif isinstance(item, tl.Title):
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
        return self._timeline.state(sid).open_turn is not None

    def ended(self, sid: str) -> list[int]:
        """The turns ``sid`` ended, in order."""
        return self._of(sid).ended

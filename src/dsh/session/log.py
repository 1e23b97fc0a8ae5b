"""Session: one agent's append-only event log in memory, enforcing contiguous seqs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh import jsonx
from dsh.errors import InvalidEventError
from dsh.events import Event, SessionHeader, check_contiguous, check_cut, check_event
from dsh.events.vocabulary import SURFACE_TYPES, TURN_START
from dsh.ids import now_ms


class Session:
    """A session's header, its log and its explicit inherited cut.

    ``events`` is append-only; ``append`` assigns the next seq. ``seed`` (the stored log on
    resume, or a fork child's inherited prefix plus marker) is taken as-is, and the cut is
    the one given explicitly — never recomputed from the seed's length.
    """

    __slots__ = ("_events", "header", "inherited_event_count")

    def __init__(
        self,
        header: SessionHeader,
        seed: Sequence[Event] = (),
        *,
        inherited_event_count: int = 0,
    ) -> None:
        events = list(seed)
        check_contiguous(events, f"session {header.id}")
        check_cut(header, inherited_event_count, events)
        self.header = header
        self.inherited_event_count = inherited_event_count
        self._events = events

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def events(self) -> Sequence[Event]:
        return self._events

    @property
    def next_seq(self) -> int:
        return len(self._events)

    @property
    def own_events(self) -> Sequence[Event]:
        """The events after the inherited cut (the session's own work)."""
        return self._events[self.inherited_event_count :]

    def append(
        self,
        type: str,
        data: Any,
        *,
        source_event_seqs: Sequence[int] | None = None,
        time: int | None = None,
    ) -> Event:
        """Append one event with the next seq; surface types get ``surfaceOp: "append"``."""
        seq = len(self._events)
        if source_event_seqs is not None and any(s >= seq or s < 0 for s in source_event_seqs):
            raise InvalidEventError(f"session {self.id}: sourceEventSeqs must cite earlier seqs")
        where = f"{type}#{seq}"
        event = Event(
            type,
            seq,
            now_ms() if time is None else time,
            data,
            "append" if type in SURFACE_TYPES else None,
            tuple(source_event_seqs) if source_event_seqs is not None else None,
            data_json=jsonx.encode_checked(data, f"{where}.data"),
        )
        self._events.append(event)
        return event

    def append_event(self, event: Event) -> Event:
        """Append a pre-built event; its seq must be the next one."""
        if event.seq != len(self._events):
            raise InvalidEventError(f"session {self.id}: expected seq {len(self._events)}, got {event.seq}")
        check_event(event)
        self._events.append(event)
        return event

    def last_turn(self) -> int:
        """The number of the last ``turn/start`` in the log (seeded events included), or 0."""
        for event in reversed(self._events):
            if event.type == TURN_START:
                return int(event.data["turn"])
        return 0

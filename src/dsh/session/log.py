"""Session: one agent's append-only event log in memory, enforcing contiguous seqs."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from dsh import jsonx
from dsh.errors import InvalidEventError
from dsh.events import Event, SessionHeader, check_contiguous, check_cut, check_event
from dsh.events.sparse import SparseLog
from dsh.events.vocabulary import ASSISTANT_CHUNK, SESSION_END_SEED, SURFACE_TYPES, TURN_START
from dsh.ids import now_ms


class Session:
    """A session's header, its log and its explicit inherited cut.

    ``events`` is append-only; ``append`` assigns the next seq. ``seed`` (the stored log on
    resume, or a fork child's inherited prefix plus marker) is taken as-is, and the cut is
    the one given explicitly — never recomputed from the seed's length.

    :meth:`of_type` reads the events of some types through an index by type (built in the
    seed's one walk, which also checks its seqs and finds its cut marker; kept by every
    append): a resumed session's setup asks for the last ``request/header``, its titles, its
    ``approval/policy`` ... of a 100 k-event log without walking it once per question.

    A seed that is a surface read's :class:`~dsh.events.sparse.SparseLog` stays one: its runs
    of partial chunks are neither built nor walked (their seqs were checked by the store) until
    something reads them, e.g. ``of_type("assistant/chunk")``, which indexes them then.
    """

    __slots__ = ("_by_type", "_events", "_runs_unindexed", "header", "inherited_event_count")

    def __init__(
        self,
        header: SessionHeader,
        seed: Sequence[Event] = (),
        *,
        inherited_event_count: int = 0,
    ) -> None:
        events: list[Event] | SparseLog
        if isinstance(seed, SparseLog):
            events = seed.copy()
            index = _by_type(events.outside_runs(), f"session {header.id}", checked=True)
        else:
            events = list(seed)
            index = _by_type(events, f"session {header.id}")
        check_cut(header, inherited_event_count, events, index.get(SESSION_END_SEED, ()))
        self.header = header
        self.inherited_event_count = inherited_event_count
        self._events = events
        self._by_type = index
        self._runs_unindexed = isinstance(events, SparseLog) and events.has_runs

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

    def of_type(self, *types: str, own: bool = False, since: int = 0) -> list[Event]:
        """The events of ``types`` in log order, from seq ``since`` on (``own``: and from the
        inherited cut on)."""
        if self._runs_unindexed and ASSISTANT_CHUNK in types:  # the chunks of the runs, at last
            self._by_type[ASSISTANT_CHUNK] = [e for e in self._events if e.type == ASSISTANT_CHUNK]
            self._runs_unindexed = False
        index = self._by_type
        start = max(since, self.inherited_event_count if own else 0)
        lists = [
            found[bisect_left(found, start, key=_seq) :] if start > 0 else found
            for t in dict.fromkeys(types)
            if (found := index.get(t))
        ]  # each cut at ``start`` before the merge: a later pass pays for what came since
        lists = [found for found in lists if found]
        if len(lists) == 1:
            return list(lists[0])
        return sorted(chain(*lists), key=_seq)  # sorted runs: merged

    def _indexed(self, event: Event) -> Event:
        self._events.append(event)
        found = self._by_type.get(event.type)
        if found is None:
            self._by_type[event.type] = [event]
        else:
            found.append(event)
        return event

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
        return self._indexed(event)

    def append_event(self, event: Event) -> Event:
        """Append a pre-built event; its seq must be the next one."""
        if event.seq != len(self._events):
            raise InvalidEventError(f"session {self.id}: expected seq {len(self._events)}, got {event.seq}")
        check_event(event)
        return self._indexed(event)

    def last_turn(self) -> int:
        """The number of the last ``turn/start`` in the log (seeded events included), or 0."""
        starts = self._by_type.get(TURN_START)
        return int(starts[-1].data["turn"]) if starts else 0


def _seq(event: Event) -> int:
    return event.seq


def _by_type(events: Iterable[Event], where: str, *, checked: bool = False) -> dict[str, list[Event]]:
    """The seed's events by type, in log order; its seqs checked contiguous from 0 in the same
    walk (the rule: ``dsh.events.check_contiguous``, which names the first wrong one), unless
    the store ``checked`` them."""
    index: dict[str, list[Event]] = {}
    get = index.get
    for i, event in enumerate(events):
        if not checked and event.seq != i:
            check_contiguous((event,), where, i)  # raises, naming it
        found = get(event.type)
        if found is None:
            index[event.type] = [event]
        else:
            found.append(event)
    return index

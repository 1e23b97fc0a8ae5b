"""A surface read's log with its runs of bare chunks left unbuilt until someone reads them.

96% of a log in the original's shape are version-0 ``assistant/chunk`` events. A surface read
(``dsh.events.deferred``) hands them back *partial* — ``data`` ``None``: nothing but their type,
seq and time — and the readers of the model-visible history (resume, ``dsh run -c``, the
history fold, the session's index) never look at them. Building 23 k such events was most of
a 24 k-event surface read. A store that keeps a run of them apart (SQLite's packed chunk rows)
hands back a :class:`SparseLog` instead: every other event built, each run an
:class:`UnbuiltRun` (its first seq, its length, and how to get its times).

A :class:`SparseLog` is a ``Sequence[Event]`` like a list: indexing, slicing (a list),
iterating, ``reversed`` and ``len`` see every event, a run's events built the first time one of
them is read (and kept). :meth:`SparseLog.append` adds an event (a session's next). What
skips the runs without building them: :meth:`SparseLog.outside_runs` and
:func:`without_chunk_runs` — right for a reader of events that carry a ``surfaceOp`` or have
another type, since a run's events are plain partial chunks (no ``surfaceOp``, no
``sourceEventSeqs``, not ignorable).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import cast, overload

from dsh.events.envelope import Event, read_event
from dsh.events.vocabulary import ASSISTANT_CHUNK


class UnbuiltRun:
    """``count`` partial ``assistant/chunk`` events from seq ``first``; ``times()`` their times
    (a store's decoder: it raises the store's ``CorruptLogError`` for bytes that do not decode).
    A plain class, not a dataclass: this module loads with ``dsh.events`` (every command), and
    a frozen dataclass's generated methods cost ~1 ms to build."""

    __slots__ = ("count", "first", "times")

    def __init__(self, first: int, count: int, times: Callable[[], list[int]]) -> None:
        self.first = first
        self.count = count
        self.times = times

    def __repr__(self) -> str:
        return f"UnbuiltRun(first={self.first}, count={self.count})"

    @property
    def end(self) -> int:
        return self.first + self.count


class SparseLog(Sequence[Event]):
    """Events by seq (slot ``i`` holds seq ``i``), runs of partial chunks built when read.

    ``slots``: the log, ``None`` where a run's events are not built (the caller checked the
    built events' seqs); ``runs``: those runs, in seq order, exactly covering the ``None``s.
    """

    __slots__ = ("_firsts", "_runs", "_slots", "_unbuilt")

    def __init__(self, slots: list[Event | None], runs: Sequence[UnbuiltRun]) -> None:
        self._slots = slots
        self._runs = tuple(runs)
        self._unbuilt = dict.fromkeys(range(len(self._runs)))
        """Indexes (in ``_runs``) of the runs not built yet."""
        self._firsts = [run.first for run in self._runs]

    @property
    def has_runs(self) -> bool:
        """Whether any run was left apart (built since or not)."""
        return bool(self._runs)

    def copy(self) -> SparseLog:
        """Another log of the same events (built ones shared), appended to on its own."""
        twin = SparseLog(list(self._slots), ())
        twin._runs, twin._firsts, twin._unbuilt = self._runs, self._firsts, dict(self._unbuilt)
        return twin

    def _build(self, at: int) -> Event:
        """Build the run holding seq ``at`` (into its slots); the event at ``at``."""
        k = bisect_right(self._firsts, at) - 1
        run = self._runs[k]
        times = run.times()
        self._slots[run.first : run.end] = [
            read_event(ASSISTANT_CHUNK, seq, time, None, None, None, False, True)
            for seq, time in zip(range(run.first, run.end), times, strict=True)
        ]
        del self._unbuilt[k]
        return cast(Event, self._slots[at])

    def _built(self, start: int, stop: int) -> list[Event | None]:
        """The slots ``[start, stop)`` with every run in them built."""
        if self._unbuilt:
            for k in list(self._unbuilt):
                run = self._runs[k]
                if run.first < stop and start < run.end:
                    self._build(run.first)
        return self._slots

    def __len__(self) -> int:
        return len(self._slots)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            start, stop, _ = index.indices(len(self._slots))
            return self._built(start, stop)[index]  # type: ignore[return-value]
        event = self._slots[index]
        return event if event is not None else self._build(index % len(self._slots))

    def __iter__(self) -> Iterator[Event]:
        if not self._unbuilt:
            return iter(self._slots)  # type: ignore[arg-type]
        return self._walk()

    def _walk(self) -> Iterator[Event]:
        slots = self._slots
        i = 0
        while i < len(slots):  # slots appended meanwhile are seen, as a list's iterator sees them
            event = slots[i]
            yield event if event is not None else self._build(i)
            i += 1

    def __reversed__(self) -> Iterator[Event]:
        for i in range(len(self._slots) - 1, -1, -1):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SparseLog({len(self._slots)} events, {len(self._unbuilt)} runs unbuilt)"

    def append(self, event: Event) -> None:
        """Add the event with the next seq (the caller checked it)."""
        self._slots.append(event)

    def outside_runs(self, start: int = 0) -> Iterator[Event]:
        """The events from seq ``start`` on, less every run's (built or not), in log order."""
        slots = self._slots
        at = start
        for k in range(max(0, bisect_right(self._firsts, start) - 1), len(self._runs)):
            run = self._runs[k]
            if run.end <= at:
                continue
            yield from slots[at : run.first]  # type: ignore[misc]
            at = run.end
        yield from slots[at:]  # type: ignore[misc]


def without_chunk_runs(events: Sequence[Event], start: int = 0) -> Iterator[Event]:
    """The events from seq ``start`` on that a reader of ``surfaceOp``s or of other types than
    ``assistant/chunk`` needs: all of them, but a :class:`SparseLog`'s runs (never built)."""
    if isinstance(events, SparseLog):
        return events.outside_runs(start)
    if isinstance(events, list):
        return iter(events[start:])
    return (events[i] for i in range(start, len(events)))

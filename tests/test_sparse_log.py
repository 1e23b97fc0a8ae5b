"""``SparseLog``: a surface read's events with runs of partial chunks built only when read."""

from __future__ import annotations

import pytest

from dsh.events import Event
from dsh.events.sparse import SparseLog, UnbuiltRun, without_chunk_runs
from dsh.session import HistoryProjector, Session
from dsh.store.contract_tools import sample_header
from dsh.store.samples import completed_turns

RUNS = ((7, 5), (12, 4), (20, 6))
"""(first seq, count) of each run of partial chunks in the log below."""


def _whole() -> list[Event]:
    """A 30-event log: completed turns' events, partial chunks at the runs' seqs."""
    turns = completed_turns(10)[:30]
    in_run = {s for first, count in RUNS for s in range(first, first + count)}
    return [
        Event("assistant/chunk", i, 1_000 + i, None, partial=True) if i in in_run else e.with_seq(i)
        for i, e in enumerate(turns)
    ]


class _Log:
    """A sparse copy of :func:`_whole` that counts the runs it built."""

    def __init__(self) -> None:
        self.whole = _whole()
        self.built: list[int] = []
        slots: list[Event | None] = list(self.whole)
        runs = []
        for first, count in RUNS:
            slots[first : first + count] = [None] * count
            runs.append(UnbuiltRun(first, count, self._times(first, count)))
        self.log = SparseLog(slots, runs)

    def _times(self, first: int, count: int):  # type: ignore[no-untyped-def]
        def times() -> list[int]:
            self.built.append(first)
            return [1_000 + s for s in range(first, first + count)]

        return times


def test_it_reads_as_the_whole_log_building_each_run_once_when_read() -> None:
    sparse = _Log()
    log, whole = sparse.log, sparse.whole
    assert len(log) == 30 and sparse.built == []
    assert log[3] == whole[3] and log[-1] == whole[-1] and sparse.built == [], "outside every run"
    assert log[13] == whole[13] and log[-9] == whole[21] and sparse.built == [12, 20]
    assert log[13] is log[13], "a run is built once and kept"
    assert log[5:14] == whole[5:14] and sparse.built == [12, 20, 7]
    assert list(log) == whole and list(reversed(log)) == whole[::-1] and log == whole
    assert sparse.built == [12, 20, 7], "each run built once"
    assert all(e.partial and e.data is None for e in log[7:12])


def test_iterating_builds_only_the_runs_it_reaches_and_sees_appends() -> None:
    sparse = _Log()
    walk = iter(sparse.log)
    assert [next(walk) for _ in range(8)] == sparse.whole[:8] and sparse.built == [7]
    extra = Event("turn/start", 30, 2_000, {"turn": 9})
    sparse.log.append(extra)
    assert list(walk) == [*sparse.whole[8:], extra] and len(sparse.log) == 31


def test_outside_runs_skips_every_run_built_or_not() -> None:
    sparse = _Log()
    outside = [e for e in sparse.whole if not any(f <= e.seq < f + c for f, c in RUNS)]
    assert list(sparse.log.outside_runs()) == outside and sparse.built == []
    assert list(sparse.log.outside_runs(14)) == [e for e in outside if e.seq >= 14], "from inside a run"
    assert list(sparse.log.outside_runs(17)) == [e for e in outside if e.seq >= 17], "after one"
    assert list(sparse.log.outside_runs(26)) == sparse.whole[26:]
    sparse.log[8]
    assert list(sparse.log.outside_runs()) == outside, "a built run is still a run"
    assert list(without_chunk_runs(sparse.log, 9)) == [e for e in outside if e.seq >= 9]
    assert list(without_chunk_runs(sparse.whole, 9)) == sparse.whole[9:], "a list: every event"


def test_a_copy_is_appended_to_and_built_on_its_own() -> None:
    sparse = _Log()
    twin = sparse.log.copy()
    twin.append(Event("turn/start", 30, 2_000, {"turn": 9}))
    assert len(twin) == 31 and len(sparse.log) == 30
    assert twin[8] == sparse.whole[8] and sparse.built == [7]
    assert sparse.log[8] == sparse.whole[8] and sparse.built == [7, 7], "the original builds its own"


def test_a_run_whose_times_do_not_match_its_length_is_refused() -> None:
    log = SparseLog([None, None], [UnbuiltRun(0, 2, lambda: [1])])
    with pytest.raises(ValueError):
        log[0]


def test_a_session_seeded_sparse_walks_no_run_until_asked_for_its_chunks() -> None:
    sparse = _Log()
    header = sample_header("s")
    session = Session(header, sparse.log)
    assert sparse.built == [], "seeding indexes the events outside the runs"
    assert session.last_turn() == max(e.data["turn"] for e in sparse.whole if e.type == "turn/start")
    projector = HistoryProjector()
    assert projector.messages(session.events) == HistoryProjector().messages(sparse.whole)
    assert sparse.built == [], "the history fold skips the runs"
    session.append("assistant/chunk", {"turn": 9, "step": 1, "chunk": {"type": "text-delta", "index": 0}})
    chunks = session.of_type("assistant/chunk")
    assert [e.seq for e in chunks] == [e.seq for e in sparse.whole if e.type == "assistant/chunk"] + [30]
    assert sorted(sparse.built) == [7, 12, 20]
    assert list(session.events)[:30] == sparse.whole
    assert len(sparse.log) == 30, "the session appends to its own copy"

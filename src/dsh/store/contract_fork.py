"""Contract checks for a fork at any completed turn (issue #41 item 1), every backend.

A turn of :func:`~dsh.store.samples.completed_turns` is six events, so turn ``t`` ends at
seq ``6 t - 1`` and a fork at it cuts at ``6 t``.
"""

from __future__ import annotations

from dsh.errors import (
    ForkBoundaryError,
    ForkOpenTurnError,
    ParentReferencedError,
    SessionNotFoundError,
    UsageError,
)
from dsh.events import Event
from dsh.events.fork import CUT_MARKER_DATA
from dsh.store.base import EventStore, LoadedSession
from dsh.store.contract_tools import ContractCheck, StoreOpener, ensure, raises, sample_header
from dsh.store.logfile import decode_log, encode_log
from dsh.store.memory import MemoryEventStore
from dsh.store.samples import completed_turns, open_turn
from dsh.store.transfer import export_session

TURN = 6
"""Events per sample turn."""


def _check_cut(child: LoadedSession, parent: LoadedSession, cut: int, what: str) -> None:
    ensure(child.inherited_event_count == cut and child.header.is_seeded, f"{what}: cut {cut}")
    ensure(child.events[:cut] == parent.events[:cut], f"{what}: the parent's first {cut} events verbatim")
    marker = child.events[cut]
    ensure(marker.type == "session/end-seed" and marker.data == CUT_MARKER_DATA, f"{what}: marker")
    ensure(len(child.events) == cut + 1 and marker.seq == cut, f"{what}: nothing after the marker")


async def _six_turns(store: EventStore, sid: str) -> LoadedSession:
    await store.create(sample_header(sid))
    await store.append(sid, completed_turns(6))
    return await store.load(sid)


async def fork_at_a_turn_or_a_seq_cuts_after_that_turn(open_store: StoreOpener) -> None:
    """``at=N`` cuts after turn N's ``turn/end``; ``at_seq=S`` at the first ``turn/end`` at or after S."""
    store = await open_store()
    parent = await _six_turns(store, "p")
    _check_cut(await store.fork("p", child_id="t3", at=3), parent, 3 * TURN, "at turn 3")
    _check_cut(await store.fork("p", child_id="t1", at=1), parent, TURN, "at turn 1")
    _check_cut(await store.fork("p", child_id="t6", at=6), parent, 6 * TURN, "at the last turn")
    inside = await store.fork("p", child_id="s", at_seq=TURN + 2)  # inside turn 2: its end, never earlier
    _check_cut(inside, parent, 2 * TURN, "at a seq inside turn 2")
    on_end = await store.fork("p", child_id="e", at_seq=2 * TURN - 1)  # turn 2's own turn/end
    _check_cut(on_end, parent, 2 * TURN, "at turn 2's turn/end")
    _check_cut(await store.fork("p", child_id="z", at_seq=0), parent, TURN, "at seq 0")
    ensure((await store.load("p")).events == parent.events, "forking leaves the parent untouched")
    await store.append("t3", completed_turns(1, start_seq=3 * TURN + 1, first_turn=4))
    await store.close()
    store = await open_store()
    child = await store.load("t3")
    _check_cut(
        LoadedSession(child.header, 3 * TURN, child.events[: 3 * TURN + 1]), parent, 3 * TURN, "reopened"
    )
    ensure(child.inherited_event_count == 3 * TURN, "the cut survives close and reopen")
    # a fork of a fork: before its cut (from the inherited turns) and after it (its own turn 4)
    _check_cut(await store.fork("t3", child_id="g2", at=2), child, 2 * TURN, "a fork's turn 2")
    _check_cut(await store.fork("t3", child_id="g4", at=4), child, len(child.events), "a fork's own turn 4")
    listed = {s.header.id: s.event_count for s in await store.children("p")}
    ensure(listed["t3"] == len(child.events), f"the listing counts the child's events: {listed}")
    await store.close()


async def fork_at_refuses_an_open_turn_a_bad_point_and_an_unknown_session(open_store: StoreOpener) -> None:
    """Typed refusals: an open turn, past the end, before any completed turn, unknown id; nothing stored."""
    store = await open_store()
    await store.create(sample_header("live"))
    done = completed_turns(3)
    await store.append("live", [*done, *open_turn(len(done), 4)])
    await raises(ForkOpenTurnError, store.fork("live", at=4), "the open turn 4")
    await raises(ForkOpenTurnError, store.fork("live", at_seq=len(done) + 1), "a seq in the open turn")
    await raises(ForkBoundaryError, store.fork("live", at=5), "a turn past the end")
    await raises(ForkBoundaryError, store.fork("live", at=0), "turn 0")
    await raises(ForkBoundaryError, store.fork("live", at_seq=999), "a seq past the end")
    await raises(ForkBoundaryError, store.fork("live", at_seq=-1), "a negative seq")
    await raises(UsageError, store.fork("live", at=1, at_seq=1), "both a turn and a seq")
    await raises(SessionNotFoundError, store.fork("nobody", at=1), "an unknown session")
    await store.create(sample_header("fresh"))
    await raises(ForkBoundaryError, store.fork("fresh", at=1), "a session with no turn")
    await store.create(sample_header("first"))
    await store.append("first", open_turn(0, 1))
    await raises(ForkOpenTurnError, store.fork("first", at=1), "a session whose first turn is open")
    ensure(len(await store.list_sessions()) == 3, "a refused fork stores nothing")
    child = await store.fork("live", child_id="ok", at=3)  # the committed prefix of a live session
    ensure(child.inherited_event_count == len(done), "a live session forks at its completed turn")
    await store.close()


async def every_reader_sees_a_forks_whole_log(open_store: StoreOpener) -> None:
    """However a store holds a fork's prefix (a copy, a reference), ``load``, ``read_from``
    across the cut, the listings' counts, ``branch`` and export give the materialized log."""
    store = await open_store()
    parent = await _six_turns(store, "p")
    summary = await store.branch("p", child_id="c", at=4)
    ensure((summary.inherited_event_count, summary.event_count) == (4 * TURN, 4 * TURN + 1), "branch summary")
    await store.append("c", completed_turns(1, start_seq=4 * TURN + 1, first_turn=5))
    await store.append(
        "p", completed_turns(1, start_seq=6 * TURN, first_turn=7)
    )  # later parent events stay out
    child = await store.load("c")
    ensure(child.events[: 4 * TURN] == parent.events[: 4 * TURN], "the prefix is the parent's")
    ensure(len(child.events) == 5 * TURN + 1, f"prefix, marker, own turn: {len(child.events)}")
    for seq in (0, 4 * TURN - 1, 4 * TURN, 4 * TURN + 3, len(child.events)):
        ensure(await store.read_from("c", seq) == child.events[seq:], f"read_from {seq} across the cut")
    grand = await store.load((await store.branch("c", child_id="g", at=2)).header.id)  # before c's cut
    ensure(grand.events[: 2 * TURN] == parent.events[: 2 * TURN], "a fork of a fork before its cut")
    great = await store.fork("c", child_id="gg")  # after c's cut: c's marker and own turn inherited
    ensure(great.events[: len(child.events)] == child.events, "a fork of a fork after its cut")
    counts = {s.header.id: s.event_count for s in await store.list_sessions()}
    ensure(counts["c"] == len(child.events) and counts["gg"] == len(child.events) + 1, f"counts {counts}")
    exported = await export_session(store, "c")
    ensure(exported == encode_log(child), "export writes the materialized log")
    copy = MemoryEventStore()
    await copy.create_batch([decode_log(exported, "c.jsonl").for_import()])
    ensure(await export_session(copy, "c") == exported, "export -> import -> export is byte-identical")
    await store.close()
    store = await open_store()
    ensure((await store.load("c")).events == child.events, "the same after close and reopen")
    await store.close()


async def deleting_a_referenced_parent_names_its_forks(open_store: StoreOpener) -> None:
    """``delete(parent, with_children=False)`` is refused naming the forks that hold its events
    by reference (a store that copies has none: it deletes); the default deletes them all."""
    store = await open_store()
    await _six_turns(store, "p")
    await store.branch("p", child_id="c", at=2)
    try:
        await store.delete("p", with_children=False)
    except ParentReferencedError as exc:
        ensure(exc.children == ["c"] and "c" in str(exc), f"the refusal names the fork: {exc}")
        ensure({s.header.id for s in await store.list_sessions()} == {"p", "c"}, "nothing deleted")
        ensure(await store.delete("p") == ["p", "c"], "with its children it goes, forks included")
    else:
        ensure(await store.list_sessions() == [], "a copying store deleted the tree")
    ensure(await store.list_sessions() == [], "nothing is left")
    await store.close()


async def fork_at_a_turn_of_a_log_whose_turn_numbers_do_not_rise(open_store: StoreOpener) -> None:
    """Turn numbers as logged decide, even out of order (an index search falls back to every mark)."""
    store = await open_store()
    await store.create(sample_header("odd"))
    events: list[Event] = []
    for turn in (1, 2, 5, 3):
        events += completed_turns(1, start_seq=len(events), first_turn=turn)
    await store.append("odd", events)
    parent = await store.load("odd")
    _check_cut(await store.fork("odd", child_id="at3", at=3), parent, 4 * TURN, "turn 3, logged last")
    _check_cut(await store.fork("odd", child_id="at5", at=5), parent, 3 * TURN, "turn 5, logged third")
    await raises(ForkBoundaryError, store.fork("odd", at=4), "a turn number the log does not have")
    await store.close()


FORK_AT_CHECKS: tuple[ContractCheck, ...] = (
    fork_at_a_turn_of_a_log_whose_turn_numbers_do_not_rise,
    fork_at_a_turn_or_a_seq_cuts_after_that_turn,
    fork_at_refuses_an_open_turn_a_bad_point_and_an_unknown_session,
    every_reader_sees_a_forks_whole_log,
    deleting_a_referenced_parent_names_its_forks,
)

"""The ``EventStore`` contract suite: checks every store implementation must pass.

Each check is ``async def check(open_store: StoreOpener) -> None`` and raises
``AssertionError`` on a violation. ``open_store()`` must return a *new handle on the same
backing storage* each time it is called (the same database file, the same directory, the
same :class:`~dsh.store.memory.MemorySpace`), fresh for each check, so the checks can close
a store and reopen it. Run them all from pytest with, for example::

    @pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
    async def test_contract(check, tmp_path):
        await check(lambda: my_open(tmp_path))

(``StoreOpener`` is async so backends that connect over a network fit too.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from dsh.errors import (
    InvalidEventError,
    SeqConflictError,
    SessionBusyError,
    SessionExistsError,
    SessionNotFoundError,
    StoreClosedError,
)
from dsh.events import Event
from dsh.events.fork import CUT_MARKER_DATA
from dsh.store.base import EventStore, LoadedSession
from dsh.store.contract_attachments import ATTACHMENT_CHECKS
from dsh.store.contract_chunks import CHUNK_CHECKS
from dsh.store.contract_delete import DELETE_CHECKS
from dsh.store.contract_fork import FORK_AT_CHECKS
from dsh.store.contract_lineage import LINEAGE_CHECKS
from dsh.store.contract_newest import NEWEST_CHECKS
from dsh.store.contract_spool import SPOOL_CHECKS
from dsh.store.contract_surface import SURFACE_CHECKS
from dsh.store.contract_tools import BUSY_LINE
from dsh.store.contract_tools import ContractCheck as ContractCheck  # public: the suite's types
from dsh.store.contract_tools import StoreOpener as StoreOpener
from dsh.store.contract_tools import ensure as _ensure
from dsh.store.contract_tools import raises as _raises
from dsh.store.contract_tools import sample_header as _header
from dsh.store.logfile import decode_log, encode_log
from dsh.store.memory import MemoryEventStore
from dsh.store.samples import completed_turns, open_turn, varied_events
from dsh.store.transfer import export_session, import_log


def _seqs(events: Sequence[Event]) -> list[int]:
    return [e.seq for e in events]


async def _check_fork_child(child: LoadedSession, parent: LoadedSession, prefix: int) -> None:
    _ensure(child.header.is_seeded, "a fork child with inherited turns is seeded")
    _ensure(child.inherited_event_count == prefix, f"cut {child.inherited_event_count} != prefix {prefix}")
    _ensure(child.events[:prefix] == parent.events[:prefix], "the child holds the parent's prefix verbatim")
    marker = child.events[prefix]
    _ensure(marker.type == "session/end-seed" and marker.data == CUT_MARKER_DATA, "tagged marker at the cut")
    _ensure(marker.seq == prefix, "the marker's seq equals the cut")
    _ensure(_seqs(child.events) == list(range(len(child.events))), "child seqs are contiguous")


async def seqs_are_contiguous(open_store: StoreOpener) -> None:
    """Appends must continue at the next seq, without gaps; reads return exactly what was stored."""
    store = await open_store()
    await store.create(_header("s"))
    events = completed_turns(2)
    await store.append("s", events[:4])
    await store.append("s", events[4:])
    loaded = await store.load("s")
    _ensure(loaded.events == events, "load returns every appended event unchanged")
    gap = [Event("turn/start", 12, 0, {"turn": 3}), Event("turn/end", 14, 0, {"turn": 3})]
    await _raises(InvalidEventError, store.append("s", gap), "a batch with a gap")
    await _raises(SeqConflictError, store.append("s", [Event("turn/start", 13, 0, {})]), "a skipped seq")
    await _raises(SeqConflictError, store.append("s", [Event("turn/start", 5, 0, {})]), "a reused seq")
    _ensure((await store.load("s")).events == events, "refused appends store nothing")
    _ensure(await store.read_from("s", 7) == events[7:], "read_from returns the tail")
    _ensure(await store.read_from("s", 12) == [], "read_from at the end is empty")
    await _raises(InvalidEventError, store.read_from("s", -1), "a negative read_from seq")
    await store.append("s", [])
    await store.append("s", open_turn(12, 3))
    _ensure(_seqs((await store.load("s")).events) == list(range(15)), "seqs run 0..n-1")
    await store.close()


async def create_validates_seed_and_cut(open_store: StoreOpener) -> None:
    """``create`` refuses gaps, an isSeeded/marker mismatch and a cut that is not the marker's seq."""
    store = await open_store()
    prefix = completed_turns(1)
    marker = Event("session/end-seed", len(prefix), 0, dict(CUT_MARKER_DATA))
    bad = [
        (_header("gap"), [prefix[0], prefix[2]], 0, "a seed with a gap"),
        (_header("late"), prefix[1:], 0, "a seed not starting at seq 0"),
        (_header("nomark", is_seeded=True), prefix, 0, "isSeeded without a tagged marker"),
        (_header("unseeded"), [*prefix, marker], 0, "a tagged marker without isSeeded"),
        (_header("cut", is_seeded=True), [*prefix, marker], 2, "a cut that is not the marker's seq"),
        (_header("range"), prefix, 99, "a cut outside the log"),
    ]
    for header, seed, cut, what in bad:
        await _raises(InvalidEventError, store.create(header, seed, inherited_event_count=cut), what)
        _ensure(not await store.exists(header.id), f"{what}: nothing was created")
    await store.create(_header("ok", is_seeded=True), [*prefix, marker], inherited_event_count=len(prefix))
    loaded = await store.load("ok")
    _ensure(loaded.inherited_event_count == len(prefix), "an explicit seeded create keeps its cut")
    await _raises(SessionExistsError, store.create(_header("ok")), "creating an existing id")
    _ensure((await store.load("ok")).header.is_seeded, "a refused create leaves the existing session")
    await store.close()


async def unseeded_session_reports_cut_zero(open_store: StoreOpener) -> None:
    """A top-level (or spawned) session is unseeded with cut 0, also after reopening."""
    store = await open_store()
    await store.create(_header("top", origin="subagent", delegation_depth=2, agent_preset="coder"))
    await store.append("top", completed_turns(1))
    loaded = await store.load("top")
    _ensure(loaded.inherited_event_count == 0 and not loaded.header.is_seeded, "unseeded: cut 0")
    await store.close()
    store = await open_store()
    again = await store.load("top")
    _ensure(again.header == loaded.header, "every header field survives reopening")
    _ensure(again.inherited_event_count == 0, "cut 0 survives reopening")
    await store.close()


async def append_after_close_and_reopen(open_store: StoreOpener) -> None:
    """A reopened store continues the log where the closed one left it."""
    events = completed_turns(3)
    store = await open_store()
    await store.create(_header("s"))
    await store.append("s", events[:6])
    await store.close()
    store = await open_store()
    await store.append("s", events[6:12])
    await store.close()
    store = await open_store()
    await store.append("s", events[12:])
    _ensure((await store.load("s")).events == events, "every event survives close and reopen")
    await store.close()


async def buffered_appends_are_visible_and_kept(open_store: StoreOpener) -> None:
    """``durable=False`` appends are visible to reads at once and stored by ``close()``."""
    events = completed_turns(2)
    store = await open_store()
    await store.create(_header("s"))
    for event in events:
        await store.append("s", [event], durable=False)
    _ensure((await store.load("s")).events == events, "buffered events are visible to load")
    summaries = {s.header.id: s for s in await store.list_sessions()}
    _ensure(summaries["s"].event_count == len(events), "buffered events are counted")
    await store.append("s", open_turn(len(events), 3)[:1], durable=False)
    await store.close()
    store = await open_store()
    _ensure(len((await store.load("s")).events) == len(events) + 1, "close writes buffered events")
    await store.close()


async def stale_append_conflicts_and_loses_nothing(open_store: StoreOpener) -> None:
    """Two handles on one storage: the stale writer gets ``SeqConflictError``; nothing is lost."""
    events = completed_turns(2)
    first = await open_store()
    await first.create(_header("s"))
    await first.append("s", events[:2])
    second = await open_store()
    await second.append("s", events[2:6])
    conflict = await _raises(SeqConflictError, first.append("s", events[2:4]), "a stale append")
    _ensure(isinstance(conflict, SeqConflictError) and conflict.expected == 6, "the conflict names the seq")
    _ensure((await second.load("s")).events == events[:6], "the stale append lost nothing")
    await first.append("s", events[6:])
    await first.close()
    await second.close()
    store = await open_store()
    _ensure((await store.load("s")).events == events, "after the conflict the writer continues")
    await store.close()


async def cancelled_append_leaves_a_consistent_log(open_store: StoreOpener) -> None:
    """Cancelling an append either stores the whole batch or nothing; the log stays appendable."""
    events = completed_turns(2)
    store = await open_store()
    await store.create(_header("s"))
    await store.append("s", events[:1])
    for steps in range(4):  # cancel at different points: before, during and after the write
        stored = len((await store.load("s")).events)
        task = asyncio.ensure_future(store.append("s", events[stored : stored + 3]))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        loaded = (await store.load("s")).events
        _ensure(loaded == events[: len(loaded)] and len(loaded) in (stored, stored + 3), "all or nothing")
    stored = len((await store.load("s")).events)
    await store.append("s", events[stored:])
    await store.close()
    store = await open_store()
    _ensure((await store.load("s")).events == events, "after cancellations the log is complete")
    await store.close()


async def concurrent_sessions_do_not_interfere(open_store: StoreOpener) -> None:
    """Tasks appending to different sessions at once each get exactly their own log."""
    store = await open_store()
    ids = [f"s{i}" for i in range(4)]
    for sid in ids:
        await store.create(_header(sid))

    async def writer(sid: str) -> None:
        events = completed_turns(3)
        for i in range(0, len(events), 2):
            await store.append(sid, events[i : i + 2], durable=i % 4 == 0)

    await asyncio.gather(*(writer(sid) for sid in ids))
    for sid in ids:
        _ensure((await store.load(sid)).events == completed_turns(3), f"{sid} holds exactly its events")
    await store.close()


async def append_refuses_bad_events(open_store: StoreOpener) -> None:
    """Non-JSON data, unknown types, bad envelopes and a second cut marker are refused."""
    store = await open_store()
    await store.create(_header("s"))
    bad = [
        (Event("turn/start", 0, 0, {"x": float("nan")}), "NaN data"),
        (Event("turn/start", 0, 0, {1: "x"}), "a non-string key"),
        (Event("turn/start", 0, 0, {"t": (1, 2)}), "a tuple"),
        (Event("turn/start", 0, 0, {"x": 2**64}), "an integer out of range"),
        (Event("brand/new", 0, 0, {}), "an unknown, non-ignorable type"),
        (Event("turn/start", 0, 1.5, {}), "a float time"),  # type: ignore[arg-type]
        (Event("tool/result", 0, 0, {}, "append", (0,)), "a citation of a later seq"),
        (Event("session/end-seed", 0, 0, dict(CUT_MARKER_DATA)), "a cut marker after creation"),
    ]
    for event, what in bad:
        await _raises(InvalidEventError, store.append("s", [event]), what)
    _ensure((await store.load("s")).events == [], "refused events store nothing")
    good = varied_events(0)
    await store.append("s", good)
    _ensure((await store.load("s")).events == good, "valid but unusual events round-trip exactly")
    await store.close()


async def fork_child_holds_completed_turn_prefix(open_store: StoreOpener) -> None:
    """A fork child: the parent's completed turns, the tagged marker at the cut, a stable cut."""
    store = await open_store()
    await store.create(_header("parent", delegation_depth=1, agent_preset="p"))
    done = completed_turns(2)
    await store.append("parent", [*done, *open_turn(len(done), 3)])
    parent = await store.load("parent")
    child = await store.fork("parent", child_id="child", origin="subagent", created_at=5_000)
    prefix = len(done)
    await _check_fork_child(child, parent, prefix)
    header = child.header
    _ensure(
        header.parent_session == "parent" and header.cwd == "/work", "the child names its parent, same cwd"
    )
    _ensure(header.delegation_depth == 1 and header.origin == "subagent", "depth defaults to the parent's")
    _ensure(header.created_at == 5_000 and header.id == "child", "explicit id and createdAt are kept")
    _ensure(await store.load("child") == child, "load returns what fork returned")
    await store.append("child", completed_turns(1, start_seq=prefix + 1, first_turn=3))
    await store.close()
    store = await open_store()
    reopened = await store.load("child")
    _ensure(reopened.inherited_event_count == prefix, "after reopening the child's cut is unchanged")
    await _check_fork_child(reopened, parent, prefix)
    _ensure(reopened.events[: prefix + 1] == child.events, "the inherited part is unchanged")
    deeper = await store.fork("parent", child_id="deep", delegation_depth=4)
    _ensure(deeper.header.delegation_depth == 4, "an explicit depth is kept")
    _ensure((await store.load("parent")).events == parent.events, "forking leaves the parent untouched")
    await store.close()


async def fork_of_a_fork_cuts_at_the_last_marker(open_store: StoreOpener) -> None:
    """A grandchild inherits the child's marker too; its cut is its own (last) marker."""
    store = await open_store()
    await store.create(_header("a"))
    await store.append("a", completed_turns(1))
    child = await store.fork("a", child_id="b")
    cut = child.inherited_event_count
    await store.append("b", completed_turns(1, start_seq=cut + 1, first_turn=2))
    grandchild = await store.fork("b", child_id="c")
    b = await store.load("b")
    await _check_fork_child(grandchild, b, len(b.events))
    _ensure(grandchild.events[cut].data == CUT_MARKER_DATA, "the inherited marker is copied as is")
    await store.close()
    store = await open_store()
    _ensure((await store.load("c")).inherited_event_count == len(b.events), "cut stable after reopen")
    await store.close()


async def fork_without_completed_turn_is_unseeded(open_store: StoreOpener) -> None:
    """With no completed turn to inherit, the child is unseeded: no events, no marker, cut 0."""
    store = await open_store()
    await store.create(_header("empty"))
    await store.create(_header("busy"))
    await store.append("busy", open_turn(0, 1))
    for parent in ("empty", "busy"):
        child = await store.fork(parent, child_id=f"{parent}-child")
        _ensure(not child.header.is_seeded and child.inherited_event_count == 0, "unseeded, cut 0")
        _ensure(child.events == [] and child.header.parent_session == parent, "no events, parent named")
    await store.close()
    store = await open_store()
    again = await store.load("busy-child")
    _ensure(not again.header.is_seeded and again.inherited_event_count == 0 and again.events == [], "reopen")
    await store.close()


async def missing_and_duplicate_ids(open_store: StoreOpener) -> None:
    """Unknown ids raise ``SessionNotFoundError``; a fork onto an existing id is refused."""
    store = await open_store()
    _ensure(not await store.exists("nope"), "exists is false for an unknown id")
    await _raises(SessionNotFoundError, store.load("nope"), "load")
    await _raises(SessionNotFoundError, store.read_from("nope", 0), "read_from")
    await _raises(SessionNotFoundError, store.append("nope", completed_turns(1)), "append")
    await _raises(SessionNotFoundError, store.fork("nope"), "fork")
    await store.create(_header("p"))
    await store.create(_header("taken"))
    await store.append("p", completed_turns(1))
    await _raises(SessionExistsError, store.fork("p", child_id="taken"), "fork onto an existing id")
    _ensure((await store.load("taken")).events == [], "the existing session is untouched")
    auto = await store.fork("p")
    _ensure(auto.header.id not in ("p", "taken") and await store.exists(auto.header.id), "fresh child id")
    await store.close()


async def children_and_list_sessions(open_store: StoreOpener) -> None:
    """``list_sessions`` shows every session with its cut and count; ``children`` the direct forks."""
    store = await open_store()
    await store.create(_header("a", created_at=1))
    await store.create(_header("b", created_at=2))
    await store.append("a", completed_turns(1))
    c = await store.fork("a", child_id="c", created_at=3)
    await store.fork("a", child_id="d", created_at=4)
    await store.create(_header("e", created_at=5, parent_session="c", origin="subagent"))
    for handle in ("first", "reopened"):
        listed = {s.header.id: s for s in await store.list_sessions()}
        _ensure(sorted(listed) == ["a", "b", "c", "d", "e"], f"{handle}: every session is listed")
        _ensure(listed["c"].inherited_event_count == c.inherited_event_count, f"{handle}: listed cut")
        _ensure(listed["c"].event_count == len(c.events), f"{handle}: listed event count")
        _ensure(listed["a"].event_count == 6 and listed["b"].event_count == 0, f"{handle}: counts")
        kids = [s.header.id for s in await store.children("a")]
        _ensure(kids == ["c", "d"], f"{handle}: children of a, oldest first")
        _ensure([s.header.id for s in await store.children("c")] == ["e"], f"{handle}: children of c")
        _ensure(await store.children("b") == [], f"{handle}: b has no children")
        await store.close()
        store = await open_store()
    await store.close()


async def export_import_round_trip(open_store: StoreOpener) -> None:
    """Export → import keeps every event and the cut exactly (byte-identical re-export)."""
    store = await open_store()
    events = [*completed_turns(1), *varied_events(6)]
    header = _header("rich", origin="subagent", delegation_depth=3, agent_preset="coder")
    original = encode_log(LoadedSession(header, 0, events))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rich.jsonl"
        path.write_bytes(original)
        imported = await import_log(store, path)
        _ensure(imported.events == events, "import keeps every event")
        _ensure(await export_session(store, "rich") == original, "re-export is byte-identical")
        await _raises(SessionExistsError, import_log(store, path), "importing a duplicate id")
        child = await store.fork("rich", child_id="rich-child", created_at=9)
        exported = await export_session(store, "rich-child")
        decoded = decode_log(exported, "export").for_import()
        _ensure(decoded == child, "the exported child decodes to the stored child, cut included")
        other = MemoryEventStore()
        (Path(tmp) / "child.jsonl").write_bytes(exported)
        await import_log(other, Path(tmp) / "child.jsonl")
        _ensure(await export_session(other, "rich-child") == exported, "round trip through another store")
    await store.close()


async def closed_store_refuses_use(open_store: StoreOpener) -> None:
    """After ``close()`` every operation raises ``StoreClosedError``; closing twice is harmless."""
    store = await open_store()
    await store.create(_header("s"))
    await store.close()
    await store.close()
    await _raises(StoreClosedError, store.load("s"), "load after close")
    await _raises(StoreClosedError, store.append("s", completed_turns(1)), "append after close")
    await _raises(StoreClosedError, store.create(_header("t")), "create after close")
    await _raises(StoreClosedError, store.list_sessions(), "list after close")
    await _raises(StoreClosedError, store.read_from("s", 0), "read_from after close")
    await _raises(StoreClosedError, store.exists("s"), "exists after close")
    await _raises(StoreClosedError, store.children("s"), "children after close")
    await _raises(StoreClosedError, store.fork("s"), "fork after close")
    await _raises(StoreClosedError, store.create_batch([]), "create_batch after close")
    await _raises(StoreClosedError, store.lease("s"), "lease after close")
    await _raises(StoreClosedError, store.delete("s"), "delete after close")


async def create_batch_is_all_or_nothing(open_store: StoreOpener) -> None:
    """``create_batch`` stores every session of the batch, or none when any one is refused."""
    store = await open_store()
    await store.create(_header("taken"))
    good = [LoadedSession(_header(f"b{i}"), 0, completed_turns(1)) for i in range(2)]
    gap = completed_turns(1)[1:]
    bad = [
        (LoadedSession(_header("b2", created_at=2**63), 0, []), InvalidEventError, "a 65-bit header"),
        (LoadedSession(_header("b2"), 0, gap), InvalidEventError, "a seed with a gap"),
        (LoadedSession(_header("taken"), 0, []), SessionExistsError, "an id already stored"),
        (good[0], SessionExistsError, "the same id twice in the batch"),
    ]
    for third, kind, what in bad:
        await _raises(kind, store.create_batch([*good, third]), f"a batch whose third session has {what}")
        for sid in ("b0", "b1", "b2"):
            _ensure(not await store.exists(sid), f"{what}: nothing of the batch was stored ({sid})")
        _ensure((await store.load("taken")).events == [], f"{what}: the stored session is untouched")
    await store.create_batch([])
    await store.create_batch(good)
    await store.close()
    store = await open_store()
    for session in good:
        _ensure(await store.load(session.header.id) == session, "a stored batch round-trips")
    _ensure(len(await store.list_sessions()) == 3, "exactly the batch was added")
    await store.close()


async def unknown_header_fields_round_trip(open_store: StoreOpener) -> None:
    """Header fields dsh does not know survive import, reopening and export; a fork drops them."""
    store = await open_store()
    events = completed_turns(1)
    header = _header("rich", agent_preset="coder")
    line = encode_log(LoadedSession(header, 0, events)).split(b"\n", 1)
    extra = b',"title":"Fix the build","x-tool":{"name":"other","v":[1,2.5,null]}}'
    original = line[0][:-1] + extra + b"\n" + line[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rich.jsonl"
        path.write_bytes(original)
        imported = await import_log(store, path)
        want = {"title": "Fix the build", "x-tool": {"name": "other", "v": [1, 2.5, None]}}
        _ensure(imported.header_extra == want, "import keeps the unknown header fields")
        await store.close()
        store = await open_store()
        _ensure((await store.load("rich")).header_extra == want, "the store keeps them")
        _ensure(await export_session(store, "rich") == original, "export writes them back, byte for byte")
        child = await store.fork("rich", child_id="rich-kid")
        _ensure(child.header_extra == {} and (await store.load("rich-kid")).header_extra == {}, "not forked")
        bad = LoadedSession(_header("bad"), 0, [], header_extra={"id": "other"})
        await _raises(InvalidEventError, store.create_batch([bad]), "an extra field shadowing a known key")
        _ensure(not await store.exists("bad"), "nothing stored for a refused extra")
    await store.close()


async def _busy(store: EventStore, sid: str, what: str, wait: float = 0.0) -> SessionBusyError:
    exc = await _raises(SessionBusyError, store.lease(sid, wait=wait), what)
    assert isinstance(exc, SessionBusyError)
    return exc


async def lease_excludes_a_second_writer(open_store: StoreOpener) -> None:
    """A held lease makes another handle's ``lease`` fail fast with the one-line busy message."""
    first = await open_store()
    await first.create(_header("s"))
    await first.append("s", completed_turns(1))
    lease = await first.lease("s")
    _ensure(lease.session_id == "s" and lease.holder.pid == os.getpid(), "the lease names its holder")
    second = await open_store()
    started = time.monotonic()
    busy = await _busy(second, "s", "a second writer")
    _ensure(time.monotonic() - started < 1.0, "without wait the second writer fails fast")
    match = BUSY_LINE.fullmatch(str(busy))
    _ensure(match is not None, f"the busy message is one line in the documented form: {busy}")
    assert match is not None
    _ensure(match["sid"] == "s" and int(match["pid"]) == os.getpid(), f"the message names the holder: {busy}")
    _ensure(match["host"] == socket.gethostname(), f"the message names the host: {busy}")
    _ensure(busy.session_id == "s" and busy.pid == os.getpid(), "the error carries the holder")
    # readers never need the lease
    _ensure((await second.load("s")).events == completed_turns(1), "a reader loads a leased session")
    _ensure(await second.read_from("s", 2) == completed_turns(1)[2:], "a reader reads a leased session")
    _ensure([x.header.id for x in await second.list_sessions()] == ["s"], "a reader lists it")
    _ensure(b"turn/end" in await export_session(second, "s"), "a reader exports it")
    await lease.release()
    await lease.release()  # idempotent
    again = await second.lease("s")
    _ensure(again.holder.pid == os.getpid(), "after release another handle takes the lease")
    await _busy(first, "s", "the first handle after the second took it")
    await again.release()
    await first.close()
    await second.close()


async def lease_is_per_session_and_may_precede_create(open_store: StoreOpener) -> None:
    """Leases of different sessions are independent; a lease may be taken before ``create``."""
    first = await open_store()
    second = await open_store()
    early = await first.lease("new")
    await first.create(_header("new"))
    other = await second.lease("other")
    await _busy(second, "new", "a session leased before its creation")
    await first.create(_header("other"))
    await _busy(first, "other", "the other session")
    await early.release()
    await other.release()
    await (await second.lease("new")).release()  # free again
    await first.close()
    await second.close()


async def lease_is_shared_within_a_handle(open_store: StoreOpener) -> None:
    """One handle may hold a session's lease more than once; it is free after the last release."""
    first = await open_store()
    await first.create(_header("s"))
    a = await first.lease("s")
    b = await first.lease("s")
    second = await open_store()
    await a.release()
    await a.release()  # a second release of one token does not drop the other
    await _busy(second, "s", "one of two tokens still held")
    await b.release()
    await (await second.lease("s")).release()
    await first.close()
    await second.close()


async def lease_waits_for_the_holder(open_store: StoreOpener) -> None:
    """``wait=`` polls until the holder releases; it gives up with the busy error at the deadline."""
    first = await open_store()
    await first.create(_header("s"))
    held = await first.lease("s")
    second = await open_store()
    started = time.monotonic()
    await _busy(second, "s", "waiting past the deadline", wait=0.3)
    waited = time.monotonic() - started
    _ensure(0.3 <= waited < 2.0, f"gave up after the wait ({waited:.2f} s)")

    async def release_soon() -> None:
        await asyncio.sleep(0.2)
        await held.release()

    releaser = asyncio.ensure_future(release_soon())
    started = time.monotonic()
    got = await second.lease("s", wait=5.0)
    waited = time.monotonic() - started
    await releaser
    _ensure(waited < 2.0, f"the waiting writer got the lease soon after the release ({waited:.2f} s)")
    await got.release()
    await first.close()
    await second.close()


async def closing_a_store_releases_its_leases(open_store: StoreOpener) -> None:
    """``close()`` releases every lease the handle holds (as a dying holder's would be)."""
    first = await open_store()
    await first.create(_header("s"))
    await first.lease("s")
    await first.close()
    second = await open_store()
    lease = await second.lease("s")
    await lease.release()
    await second.close()
    await _raises(StoreClosedError, second.lease("s"), "lease after close")


CHECKS: dict[str, ContractCheck] = {
    check.__name__: check
    for check in (
        seqs_are_contiguous,
        create_validates_seed_and_cut,
        unseeded_session_reports_cut_zero,
        append_after_close_and_reopen,
        buffered_appends_are_visible_and_kept,
        stale_append_conflicts_and_loses_nothing,
        cancelled_append_leaves_a_consistent_log,
        concurrent_sessions_do_not_interfere,
        append_refuses_bad_events,
        fork_child_holds_completed_turn_prefix,
        fork_of_a_fork_cuts_at_the_last_marker,
        fork_without_completed_turn_is_unseeded,
        missing_and_duplicate_ids,
        children_and_list_sessions,
        export_import_round_trip,
        closed_store_refuses_use,
        create_batch_is_all_or_nothing,
        unknown_header_fields_round_trip,
        lease_excludes_a_second_writer,
        lease_is_per_session_and_may_precede_create,
        lease_is_shared_within_a_handle,
        lease_waits_for_the_holder,
        closing_a_store_releases_its_leases,
        *DELETE_CHECKS,
        *FORK_AT_CHECKS,
        *LINEAGE_CHECKS,
        *NEWEST_CHECKS,
        *ATTACHMENT_CHECKS,
        *SURFACE_CHECKS,
        *SPOOL_CHECKS,
        *CHUNK_CHECKS,
    )
}
"""Every contract check by name (stable ids for test parametrization)."""


async def run_contract(fresh_storage: Callable[[], StoreOpener]) -> None:
    """Run every check, each on new storage: ``fresh_storage()`` returns an opener over an
    empty storage (for ad-hoc use; under pytest, parametrize over :data:`CHECKS` instead)."""
    for check in CHECKS.values():
        await check(fresh_storage())

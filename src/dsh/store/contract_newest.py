"""Contract checks for bounded listings (``dsh.store.newest``, ``ListsNewest``), every backend:
what a store that ``ListsNewest`` reads is what the whole listing says."""

from __future__ import annotations

from dsh.events import Event, SessionHeader
from dsh.events.lineage import below
from dsh.store.base import EventStore, ListsNewest, LoadedSession, SessionSummary
from dsh.store.contract_tools import ContractCheck, StoreOpener, ensure, sample_header
from dsh.store.newest import latest_listed, latest_top_level, newest_sessions
from dsh.store.samples import completed_turns

_TREE = (  # (id, created_at, parent): kid and grandkid older than their root (an import can say so)
    ("old1", 1_000, None),
    ("old2", 1_001, None),
    ("root", 1_005, None),
    ("kid", 900, "root"),
    ("grandkid", 800, "kid"),
    ("other", 700, "old1"),
    ("kid2", 1_020, "root"),
    ("orphan", 1_003, "gone"),
    ("new", 1_030, None),
)


async def _stored(open_store: StoreOpener) -> tuple[EventStore, list[SessionSummary]]:
    store = await open_store()
    batch = [
        LoadedSession(sample_header(sid, created_at=created, parent_session=parent), 0, completed_turns(1))
        for sid, created, parent in _TREE
    ]
    await store.create_batch(batch)  # "orphan": its parent is not stored
    return store, await store.list_sessions()


def _ids(summaries: list[SessionSummary]) -> list[str]:
    return [s.header.id for s in summaries]


def _below(listed: list[SessionSummary], tops: list[SessionSummary]) -> list[SessionSummary]:
    """``tops`` and every descendant of them, in ``listed``'s order."""
    kids: dict[str, list[str]] = {}
    for s in listed:
        parent = s.header.parent_session
        if parent is not None and parent != s.header.id:
            kids.setdefault(parent, []).append(s.header.id)
    wanted = {sid for top in tops for sid in below(top.header.id, lambda p: kids.get(p, ()))}
    return [s for s in listed if s.header.id in wanted]


async def the_newest_come_with_every_descendant(open_store: StoreOpener) -> None:
    """``newest_sessions(store, n)``: the n newest sessions and every descendant, however old,
    each once, as the whole listing has them (a store that ``ListsNewest`` reads only those)."""
    store, listed = await _stored(open_store)
    shown = _ids(await newest_sessions(store, 3))
    ensure(shown == ["grandkid", "kid", "root", "kid2", "new"], f"root brings its older kids: {shown}")
    for count in range(len(_TREE) + 2):
        expected = _below(listed, listed[-count:] if count else [])
        got = await newest_sessions(store, count)
        ensure(got == expected, f"newest {count}: {_ids(got)} != {_ids(expected)}")
    await store.close()


async def newest_roots_are_a_nested_listings_first_rows(open_store: StoreOpener) -> None:
    """``ListsNewest.newest_roots(n)``: the session count, and the n newest top rows (no parent,
    or a parent not stored) with every descendant, as the whole listing has them."""
    store, listed = await _stored(open_store)
    if isinstance(store, ListsNewest):
        total, shown = await store.newest_roots(2)
        two = (total, _ids(shown))
        ensure(two == (9, ["grandkid", "kid", "root", "kid2", "new"]), f"root and new, root's kids: {two}")
        stored = {s.header.id for s in listed}
        tops = [s for s in listed if s.header.parent_session is None or s.header.parent_session not in stored]
        for count in range(len(_TREE) + 2):
            total, got = await store.newest_roots(count)
            expected = _below(listed, tops[-count:] if count else [])
            ensure(total == len(listed), f"newest_roots counts {total} sessions, not {len(listed)}")
            ensure(got == expected, f"newest_roots {count}: {_ids(got)} != {_ids(expected)}")
    await store.close()


def _at(time: int, start_seq: int = 0) -> list[Event]:
    """A completed turn whose events all happened at ``time``."""
    turn = completed_turns(1, start_seq=start_seq, first_turn=1 + start_seq)
    return [Event(e.type, e.seq, time, e.data, e.surface_op) for e in turn]


_LATEST = (  # (id, cwd, created_at, last event time or None: no event, origin, parent)
    ("a", "/work", 1_000, 5_000, None, None),
    ("b", "/work", 2_000, 5_000, None, None),  # a's activity, created later
    ("bb", "/work", 2_000, 5_000, None, None),  # b's activity and creation: the greater id
    ("branch", "/work", 1_500, 4_000, None, "a"),  # a user's branch: top level
    ("sub", "/work", 4_000, 9_000, "subagent", "b"),  # an agent's child: never taken
    ("c", "/work", 3_000, None, None, None),  # no event: its creation time
    ("elsewhere", "/other", 1_000, 9_999, None, None),
    ("e1", "/empty", 7_000, None, None, None),
    ("e2", "/empty", 6_000, 6_500, None, None),
    ("lone", "/subs", 1_000, 2_000, "subagent", "a"),
)


async def continue_takes_the_latest_top_level_session(open_store: StoreOpener) -> None:
    """``latest_top_level(store, cwd)`` (what ``--continue`` takes; a store that ``FindsLatest``
    finds it without listing): the top-level session of ``cwd`` with the latest last event (its
    creation time when it has none), then the latest created, then the greatest id — what the
    whole listing's rule (``latest_listed``) finds."""
    store = await open_store()
    batch = [
        LoadedSession(
            SessionHeader(
                id=sid, created_at=created, cwd=cwd, origin=origin, parent_session=parent,
                delegation_depth=1 if origin == "subagent" else 0,
            ),
            0,
            [] if last is None else _at(last),
        )
        for sid, cwd, created, last, origin, parent in _LATEST
    ]  # fmt: skip
    await store.create_batch(batch)
    expected = {"/work": "bb", "/other": "elsewhere", "/empty": "e1", "/subs": None, "/nowhere": None}
    for cwd, sid in expected.items():
        found, listed = await latest_top_level(store, cwd), await latest_listed(store, cwd)
        ensure(found == sid, f"--continue in {cwd}: {found!r}, not {sid!r}")
        ensure(listed == sid, f"the listing's rule in {cwd}: {listed!r}, not {sid!r}")
    await store.append("a", _at(8_000, start_seq=len(_at(0))))
    found = await latest_top_level(store, "/work")
    ensure(found == "a", f"a later event makes a the latest: {found!r}")
    await store.close()


NEWEST_CHECKS: tuple[ContractCheck, ...] = (
    the_newest_come_with_every_descendant,
    newest_roots_are_a_nested_listings_first_rows,
    continue_takes_the_latest_top_level_session,
)

"""Contract checks for untrusted ids and ``parentSession`` cycles (issue #36 item 10), every backend."""

from __future__ import annotations

from dsh.errors import InvalidEventError, InvalidSessionIdError
from dsh.store.base import LoadedSession
from dsh.store.contract_tools import ContractCheck, StoreOpener, ensure, raises, sample_header
from dsh.store.samples import completed_turns

BAD_IDS = ("x" * 10_000, "../../outside", "a/b", "a\\b", "a\x00b", "..", "")


async def malformed_ids_are_refused(open_store: StoreOpener) -> None:
    """A malformed id or parent id is refused by ``create``, ``create_batch``, ``fork``; none is stored."""
    store = await open_store()
    await store.create(sample_header("ok"), completed_turns(1))
    for bad in BAD_IDS:
        if bad:  # the header itself refuses an empty id
            await raises(InvalidSessionIdError, store.create(sample_header(bad)), f"create {bad[:12]!r}")
            batch = [LoadedSession(sample_header(bad), 0, [])]
            await raises(InvalidSessionIdError, store.create_batch(batch), f"create_batch {bad[:12]!r}")
        await raises(InvalidSessionIdError, store.fork("ok", child_id=bad), f"fork --id {bad[:12]!r}")
        orphan = sample_header("child", parent_session=bad or None, origin="subagent")
        if bad:
            await raises(InvalidSessionIdError, store.create(orphan), f"a parent id {bad[:12]!r}")
    ensure([s.header.id for s in await store.list_sessions()] == ["ok"], "nothing else was stored")
    await store.close()


async def parent_cycles_are_refused(open_store: StoreOpener) -> None:
    """A self-parent (``create``, ``create_batch``) and a batch closing a cycle are refused, all-or-none."""
    store = await open_store()
    me = sample_header("me", parent_session="me", origin="subagent")
    await raises(InvalidEventError, store.create(me), "a session naming itself as its parent")
    await raises(InvalidEventError, store.create_batch([LoadedSession(me, 0, [])]), "an imported self-parent")
    a = LoadedSession(sample_header("a", parent_session="b", origin="subagent"), 0, completed_turns(1))
    b = LoadedSession(sample_header("b", parent_session="a", origin="subagent", created_at=2_000), 0, [])
    await raises(InvalidEventError, store.create_batch([a, b]), "a batch that is a two-session cycle")
    ensure(await store.list_sessions() == [], "nothing of a refused batch is stored")
    await store.create_batch([a])  # an orphan: its parent is not stored (yet)
    exc = await raises(InvalidEventError, store.create_batch([b]), "an import closing a cycle with the store")
    ensure("b -> a -> b" in str(exc), f"the cycle is named: {exc}")
    c = LoadedSession(sample_header("c", parent_session="a", origin="subagent", created_at=3_000), 0, [])
    await store.create_batch([c])  # a child of a stored session is no cycle
    ensure([s.header.id for s in await store.list_sessions()] == ["a", "c"], "a and its child c are stored")
    await store.close()


LINEAGE_CHECKS: tuple[ContractCheck, ...] = (malformed_ids_are_refused, parent_cycles_are_refused)

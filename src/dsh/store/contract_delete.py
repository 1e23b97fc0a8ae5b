"""The ``EventStore.delete`` contract checks (part of ``dsh.store.contract.CHECKS``)."""

from __future__ import annotations

import os

from dsh.errors import SessionBusyError, SessionNotFoundError
from dsh.store.base import EventStore
from dsh.store.contract_tools import BUSY_LINE, ContractCheck, StoreOpener, ensure, raises, sample_header
from dsh.store.samples import completed_turns


async def _family(store: EventStore) -> None:
    """``r`` with a fork child ``f`` (and its spawn child ``g``), a spawn child ``s``; ``u`` unrelated."""
    await store.create(sample_header("r"))
    await store.append("r", completed_turns(2))
    await store.fork("r", child_id="f", created_at=2_000)
    await store.create(sample_header("s", parent_session="r", origin="subagent", created_at=3_000))
    await store.append("s", completed_turns(1))
    await store.create(sample_header("g", parent_session="f", origin="subagent", created_at=4_000))
    await store.create(sample_header("u", created_at=5_000))
    await store.append("u", completed_turns(1))


async def _ids(store: EventStore) -> list[str]:
    return [s.header.id for s in await store.list_sessions()]


async def delete_removes_the_session_and_its_descendants(open_store: StoreOpener) -> None:
    """``delete`` removes the session and every descendant, returns them root first, keeps the rest."""
    store = await open_store()
    await _family(store)
    more = completed_turns(1, start_seq=len(completed_turns(2)), first_turn=3)
    await store.append("r", more, durable=False)  # buffered: deleted with the rest
    deleted = await store.delete("f")
    ensure(deleted == ["f", "g"], f"deleting a child removes it and its child only: {deleted}")
    ensure(await _ids(store) == ["r", "s", "u"], "the parent, its other child and others stay")
    deleted = await store.delete("r")
    ensure(deleted[0] == "r" and sorted(deleted) == ["r", "s"], f"root first, then descendants: {deleted}")
    for sid in ("r", "s", "f", "g"):
        ensure(not await store.exists(sid), f"{sid} is gone")
    await raises(SessionNotFoundError, store.load("r"), "loading a deleted session")
    await store.close()
    again = await open_store()
    ensure(await _ids(again) == ["u"], "the delete is durable: a new handle lists only the unrelated session")
    ensure((await again.load("u")).events == completed_turns(1), "the unrelated session is intact")
    await again.create(sample_header("r"))  # a deleted id is free again
    ensure((await again.load("r")).events == [], "a re-created id starts empty")
    await again.close()


async def delete_of_a_missing_session_changes_nothing(open_store: StoreOpener) -> None:
    """Deleting an id the store does not hold raises ``SessionNotFoundError`` naming it."""
    store = await open_store()
    await _family(store)
    exc = await raises(SessionNotFoundError, store.delete("nope"), "deleting a missing session")
    ensure("nope" in str(exc), f"the error names the id: {exc}")
    ensure(await _ids(store) == ["r", "f", "s", "g", "u"], "nothing was deleted")
    await store.close()


async def delete_refuses_a_session_a_writer_holds(open_store: StoreOpener) -> None:
    """A lease held by another handle on any session of the tree refuses the whole delete."""
    writer = await open_store()
    await _family(writer)
    lease = await writer.lease("g")
    other = await open_store()
    busy = await raises(SessionBusyError, other.delete("r"), "deleting a tree with a leased grandchild")
    match = BUSY_LINE.fullmatch(str(busy))
    ensure(match is not None and match["sid"] == "g", f"one busy line naming the held session: {busy}")
    ensure(match is not None and int(match["pid"]) == os.getpid(), f"... and its holder: {busy}")
    ensure(await _ids(other) == ["r", "f", "s", "g", "u"], "a refused delete deletes nothing")
    ensure((await other.load("r")).events == completed_turns(2), "the root is intact")
    await raises(SessionBusyError, other.delete("f"), "deleting the leased session's parent")
    await lease.release()
    deleted = sorted(await other.delete("r"))
    ensure(deleted == ["f", "g", "r", "s"], "after the release the delete goes through")
    await writer.close()
    await other.close()


DELETE_CHECKS: tuple[ContractCheck, ...] = (
    delete_removes_the_session_and_its_descendants,
    delete_of_a_missing_session_changes_nothing,
    delete_refuses_a_session_a_writer_holds,
)
"""The delete checks, in order (listed in ``dsh.store.contract.CHECKS``)."""

"""``newest_sessions``: the newest sessions and their descendants, whatever the backend
(SQLite reads them with one bounded query, ``ListsNewest``; the others list every session)."""

from __future__ import annotations

from pathlib import Path

from dsh import jsonx
from dsh.events import SessionHeader
from dsh.session.digest import derive, digest_json
from dsh.store import SqliteEventStore
from dsh.store.base import ListsNewest, SessionSummary
from dsh.store.contract import StoreOpener
from dsh.store.newest import newest_sessions
from dsh.store.samples import completed_turns


def _header(sid: str, created_at: int, parent: str | None = None) -> SessionHeader:
    return SessionHeader(id=sid, created_at=created_at, cwd="/work", parent_session=parent)


def ids(summaries: list[SessionSummary]) -> list[str]:
    return [s.header.id for s in summaries]


async def test_the_newest_come_with_every_descendant_however_old(opener: StoreOpener) -> None:
    store = await opener()
    # "kid" and "grandkid" are older than their root (an import can say so), "old*" are not below it
    for header in (
        _header("old1", 1_000),
        _header("old2", 1_001),
        _header("root", 1_005),
        _header("kid", 900, "root"),
        _header("grandkid", 800, "kid"),
        _header("other", 700, "old1"),
    ):
        await store.create(header, completed_turns(1))
    assert ids(await newest_sessions(store, 1)) == ["grandkid", "kid", "root"]
    assert ids(await newest_sessions(store, 2)) == ["grandkid", "kid", "old2", "root"]
    everything = ids(await store.list_sessions())
    assert ids(await newest_sessions(store, 100)) == everything
    assert ids(await newest_sessions(store, 0)) == []
    shown = {s.header.id: s for s in await newest_sessions(store, 1)}
    listed = {s.header.id: s for s in await store.list_sessions()}
    assert all(shown[sid] == listed[sid] for sid in shown), "the same summaries as the full listing"
    await store.close()


async def test_sqlite_lists_its_newest_and_reads_only_the_digests_asked_for(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    assert isinstance(store, ListsNewest)
    for i, sid in enumerate(("a", "b", "c")):
        header = _header(sid, 1_000 + i)
        await store.create(header, completed_turns(1))
        digest = digest_json(derive(header, completed_turns(1), 0))
        assert digest is not None
        await store.keep_digests([(sid, 6, jsonx.dumps(digest))])
    assert set(await store.kept_digests(["a", "c", "missing"])) == {"a", "c"}
    assert set(await store.kept_digests()) == {"a", "b", "c"}
    assert await store.kept_digests([]) == {}
    await store.close()

"""SQLite's kept digests for bounded listings (``newest_sessions`` and ``ListsNewest`` are
contract checks: ``dsh.store.contract_newest``, every backend)."""

from __future__ import annotations

from pathlib import Path

from dsh import jsonx
from dsh.events import SessionHeader
from dsh.session.digest import derive, digest_json
from dsh.store import SqliteEventStore
from dsh.store.base import ListsNewest
from dsh.store.samples import completed_turns


def _header(sid: str, created_at: int, parent: str | None = None) -> SessionHeader:
    return SessionHeader(id=sid, created_at=created_at, cwd="/work", parent_session=parent)


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

"""The viewer's derivations: status, title, grandchildren in the lineage tree, cuts, paging."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dsh.events import Event, SessionHeader
from dsh.session.digest import derive
from dsh.store.samples import completed_turn, completed_turns, open_turn
from dsh.store.sqlite import SqliteEventStore
from dsh.store.url import open_store
from dsh.ui.rows import DeriveCache
from dsh.ui.views import find, fork_cuts, lineage, list_page

NOW = 1_700_000_000_000


def header(sid: str, **kw: object) -> SessionHeader:
    return SessionHeader(id=sid, created_at=NOW, **kw)  # type: ignore[arg-type]


def test_status_from_the_last_turn() -> None:
    done = completed_turn(0, 1)
    assert derive(header("a"), done, 0).status == "completed"
    failed = [*done[:-1], Event("turn/end", 5, NOW, {"turn": 1, "reason": {"kind": "error"}})]
    assert derive(header("a"), failed, 0).status == "error"
    aborted = [*done[:-1], Event("turn/end", 5, NOW, {"turn": 1, "reason": {"kind": "aborted"}})]
    assert derive(header("a"), aborted, 0).status == "interrupted"
    pending = open_turn(0, 1)
    assert derive(header("a"), pending, 0, now_ms=6 + 1000).status == "running"
    assert derive(header("a"), pending, 0, now_ms=6 + 10 * 60 * 1000).status == "interrupted"
    assert derive(header("a"), [], 0).status == "empty"


def test_title_prefers_the_recorded_title_then_the_first_prompt() -> None:
    events = completed_turn(0, 1)
    assert derive(header("a"), events, 0).title == "question 1"
    titled = [*events, Event("session/title", 6, NOW, {"title": "  A   title\nwith lines "})]
    assert derive(header("a"), titled, 0).title == "A title with lines"
    long = "word " * 40
    user = {**events[2].data, "content": [{"type": "text", "text": long}]}
    events[2] = Event("user/message", 2, NOW, user, "append")
    shown = derive(header("a"), events, 0).title
    assert len(shown) == 80 and shown.endswith("…")


async def test_lineage_has_grandchildren_and_fork_cuts() -> None:
    store = open_store("memory:")
    try:
        await store.create(header("root"))
        await store.append("root", completed_turns(2))
        child = await store.fork("root", child_id="child")
        await store.append("child", completed_turn(len(child.events), 3))
        await store.fork("child", child_id="grandchild")
        await store.create(header("spawned", parent_session="root", origin="subagent", delegation_depth=1))
        cache = DeriveCache(store)
        tree = await lineage(store, cache, "grandchild")
        assert tree.id == "root"
        assert sorted(c.id for c in tree.children) == ["child", "spawned"]
        mid = find(tree, "child")
        assert mid is not None and [c.id for c in mid.children] == ["grandchild"]
        assert [(c.seq, c.child) for c in fork_cuts(tree)] == [(12, "child")]
        assert [(c.seq, c.child) for c in fork_cuts(mid)] == [(19, "grandchild")]
        assert find(tree, "spawned") is not None and find(tree, "spawned").derived.kind == "spawn"  # type: ignore[union-attr]
        page = await list_page(store, cache, sort="id", descending=False, per_page=2)
        # children nested under their parents (#35): root, child, grandchild, spawned
        assert [(r.summary.header.id, r.depth) for r in page.rows] == [("root", 0), ("child", 1)]
        assert page.pages == 2
        assert (
            next(r for r in (await list_page(store, cache)).rows if r.summary.header.id == "root").children
            == 2
        )
    finally:
        await store.close()


class _CountingDigests(SqliteEventStore):
    """A real SQLite store that records which kept digests each read asked for."""

    asked: list[list[str] | None]

    async def kept_digests(self, ids: Sequence[str] | None = None) -> dict[str, tuple[int, bytes]]:
        self.asked.append(None if ids is None else list(ids))
        return await super().kept_digests(ids)


async def test_a_page_reads_only_the_kept_digests_of_the_rows_it_shows(tmp_path: Path) -> None:
    store = _CountingDigests(tmp_path / "s.db")
    store.asked = []
    for i in range(30):
        await store.create(SessionHeader(id=f"s{i:02d}", created_at=NOW + i), completed_turns(1))
    await list_page(store, DeriveCache(store), per_page=30)  # derives all 30, keeps their digests
    store.asked.clear()
    page = await list_page(store, DeriveCache(store), per_page=10)
    assert [r.summary.header.id for r in page.rows] == [f"s{i:02d}" for i in range(29, 19, -1)]
    assert store.asked == [[f"s{i:02d}" for i in range(29, 19, -1)]], "only the shown rows' digests"
    store.asked.clear()
    await list_page(store, DeriveCache(store), query="s0", per_page=10)
    assert store.asked == [None], "a search derives every session: every digest, read once"
    await store.close()

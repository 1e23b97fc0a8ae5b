"""The sessions page's default view (newest first, no search) reads only the sessions it shows
(``ListsNewest.newest_roots``: SQLite, PostgreSQL), and shows exactly what the whole listing would."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest

from dsh.events import SessionHeader
from dsh.store.base import EventStore
from dsh.store.postgres import PostgresEventStore
from dsh.store.postgres_testing import (
    drop_schema,
    new_schema_name,
    server_url,
    unreachable_reason,
    with_schema,
)
from dsh.store.postgres_url import parse_postgres_url
from dsh.store.samples import completed_turns
from dsh.store.sqlite import SqliteEventStore
from dsh.ui.rows import DeriveCache
from dsh.ui.views import Page, list_page

# (id, created_at, parent): children older than their parent (an import can say so), a grandchild,
# an orphan (its parent is not in the store), and plain sessions around them; then (written into
# the database: a store refuses them) a session that is its own parent and a parent cycle.
SESSIONS = (
    ("p1", 1_000, None),
    ("p2", 1_001, None),
    ("root", 1_010, None),
    ("kid", 900, "root"),
    ("kid2", 1_020, "root"),
    ("grandkid", 800, "kid"),
    ("orphan", 1_005, "gone"),
    ("self", 1_003, None),
    ("cyc-a", 1_007, None),
    ("cyc-b", 1_008, None),
    ("p3", 1_030, None),
    ("p4", 1_031, None),
)
CYCLES = (("self", "self"), ("cyc-a", "cyc-b"), ("cyc-b", "cyc-a"))


async def _fill(store: EventStore) -> None:
    for sid, created, parent in SESSIONS:
        header = SessionHeader(id=sid, created_at=created, cwd="/work", parent_session=parent)
        await store.create(header, completed_turns(1))
    await store.close()


Backend = tuple[Callable[[], EventStore], Callable[[str], None]]
"""A way to open the store, and to run a statement in its database (what a store refuses)."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        db = tmp_path / "s.db"

        def sql(statement: str) -> None:
            with sqlite3.connect(db) as conn:
                conn.execute(statement)

        yield (lambda: SqliteEventStore(db)), sql
        return
    server = server_url()
    reason = unreachable_reason(server)
    if reason is not None:
        pytest.skip(reason)
    schema = new_schema_name()
    url = with_schema(server, schema)

    def pg_sql(statement: str) -> None:
        with psycopg.connect(parse_postgres_url(server).conninfo, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            conn.execute(statement)

    yield (lambda: PostgresEventStore(url)), pg_sql
    drop_schema(server, schema)


class _Listed:
    """The store seen through what every store has: ``list_sessions``, no bounded read."""

    def __init__(self, inner: EventStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("newest_roots", "newest_sessions"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def _shown(page: Page) -> tuple[object, ...]:
    rows = [(r.summary.header.id, r.depth, r.children, r.derived.status) for r in page.rows]
    return (rows, page.total, page.matched, page.page, page.pages, page.per_page)


async def _same_pages(store: EventStore) -> None:
    whole = cast(EventStore, _Listed(store))  # the reference: the whole listing's page
    for per_page in (1, 2, 3, 4, 5, 7, 50):
        for page in (1, 2, 3, 4, 9):
            fast = await list_page(store, DeriveCache(store), page=page, per_page=per_page)
            listed = await list_page(whole, DeriveCache(whole), page=page, per_page=per_page)
            assert _shown(fast) == _shown(listed), (per_page, page)
    await store.close()


async def test_the_newest_page_is_the_whole_listings_page(backend: Backend) -> None:
    open_, sql = backend
    await _fill(open_())
    await _same_pages(open_())
    for sid, parent in CYCLES:  # sessions reached by no top row: shown after every tree
        sql(f"UPDATE sessions SET parent_session = '{parent}' WHERE id = '{sid}'")
    await _same_pages(open_())


async def test_the_newest_page_reads_no_other_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    await _fill(SqliteEventStore(db))
    with sqlite3.connect(db) as conn:  # the oldest top row's session row and events cannot be read
        conn.execute("UPDATE sessions SET delegation_depth = -1 WHERE id = 'p1'")
        conn.execute("UPDATE events SET data = '{bad' WHERE session_id = 'p1'")
    store = SqliteEventStore(db)
    page = await list_page(store, DeriveCache(store), per_page=3)
    assert [(r.summary.header.id, r.depth) for r in page.rows] == [("p4", 0), ("p3", 0), ("root", 0)]
    assert (page.total, page.pages) == (12, 4)
    await store.close()


async def test_a_page_past_the_end_is_the_last_page(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    await _fill(SqliteEventStore(db))
    store = SqliteEventStore(db)
    whole = cast(EventStore, _Listed(store))
    for shown in (store, whole):
        last = await list_page(shown, DeriveCache(shown), page=3, per_page=5)
        past = await list_page(shown, DeriveCache(shown), page=99, per_page=5)
        assert (past.page, past.pages) == (3, 3) and _shown(past) == _shown(last)
    await store.close()

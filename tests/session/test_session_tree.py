"""``SessionTree.load``: the one lineage builder, against every store backend.

Kinds (spawn from the descriptor, fork from a ``store.fork``), cuts, labels, the child each
call started (from the descriptor, else by creation order), cycle safety, and statuses through
the timeline fold. PostgreSQL runs when the test server answers (else it skips, saying so).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from dsh.events import Event
from dsh.session.digest import derive
from dsh.session.timeline import SessionTree
from dsh.store import EventStore, JsonlEventStore, MemoryEventStore, SqliteEventStore
from dsh.store.postgres import PostgresEventStore
from dsh.store.postgres_testing import (
    drop_schema,
    new_schema_name,
    server_url,
    unreachable_reason,
    with_schema,
)
from tests.session.logs import child_log, header, parent_log


@pytest.fixture(scope="module")
def pg() -> Iterator[str | None]:
    url = server_url()
    yield None if unreachable_reason(url) else url


@pytest.fixture(params=["memory", "jsonl", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path, pg: str | None) -> AsyncIterator[EventStore]:
    backend = request.param
    schema = None
    if backend == "memory":
        opened: EventStore = MemoryEventStore()
    elif backend == "jsonl":
        opened = JsonlEventStore(tmp_path / "sessions")
    elif backend == "sqlite":
        opened = SqliteEventStore(tmp_path / "s.db")
    else:
        if pg is None:
            pytest.skip(f"no PostgreSQL test server at {server_url()}")
        schema = new_schema_name()
        opened = PostgresEventStore(with_schema(pg, schema))
    try:
        yield opened
    finally:
        await opened.close()
        if schema is not None and pg is not None:
            drop_schema(pg, schema)


async def _family(store: EventStore) -> None:
    """p delegates call c1 to spawn child k; f is a fork of p; g a legacy child without descriptor."""
    await store.create(header("p", created_at=1))
    await store.append("p", parent_log()[:11])
    await store.create(header("k", parent="p", created_at=2, origin="subagent"))
    await store.append("k", child_log("p"))
    await store.fork("p", child_id="f", created_at=3)


async def test_kinds_cuts_labels_and_calls(store: EventStore) -> None:
    await _family(store)
    tree = await SessionTree.load(store, "p")
    assert [n.id for n in tree.walk()] == ["p", "k", "f"]
    kids = {n.id: n for n in tree.root.children}
    assert (kids["k"].kind, kids["k"].label, kids["k"].cut, kids["k"].depth) == ("spawn", "helper", 0, 1)
    assert kids["f"].kind == "fork" and kids["f"].cut == 11 and kids["f"].label is None
    assert tree.root.kind is None and tree.child_for("p", "c1") == "k"
    statuses = {n.id: derive(n.session.header, n.session.events, n.cut).status for n in tree.walk()}
    assert statuses == {"p": "completed", "k": "completed", "f": "completed"}


async def test_a_child_without_descriptor_takes_its_parents_call_by_creation_order(store: EventStore) -> None:
    await store.create(header("p", created_at=1))
    await store.append("p", parent_log()[:11])
    await store.create(header("g", parent="p", created_at=2, origin="subagent"))
    await store.append("g", [Event("turn/start", 0, 1, {"turn": 1})])
    tree = await SessionTree.load(store, "p")
    assert tree.child_for("p", "c1") == "g" and tree.nodes["g"].kind == "spawn"
    assert derive(tree.nodes["g"].session.header, tree.nodes["g"].session.events, 0).status == "interrupted"


async def test_a_subtree_reads_only_below_its_root(store: EventStore) -> None:
    await _family(store)
    tree = await SessionTree.load(store, "k")
    assert list(tree.nodes) == ["k"] and tree.root.kind == "spawn"

"""``SqliteEventStore`` specifics: ownership stamps, layout, the persisted cut, one-statement fork."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import CorruptLogError, DshError, UnsupportedFormatError
from dsh.events import Event, SessionHeader
from dsh.store import SqliteEventStore
from dsh.store.samples import completed_turns, open_turn
from dsh.store.sqlite import APPLICATION_ID, SCHEMA_VERSION
from dsh.store.sqlite_schema import connect

HEADER = SessionHeader(id="s1", created_at=7, cwd="/w")


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


async def test_a_new_database_is_stamped_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "s.db"
    store = SqliteEventStore(path)
    await store.create(HEADER)
    await store.close()
    conn = _raw(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


async def _refused(path: Path, match: str) -> None:
    store = SqliteEventStore(path)
    with pytest.raises(UnsupportedFormatError, match=match) as info:
        await store.list_sessions()
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    await store.close()


async def test_a_foreign_application_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = _raw(path)
    conn.execute("PRAGMA application_id = 1234")
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    await _refused(path, r"not a dsh session database \(application_id 0x4d2")


async def test_a_foreign_user_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    store = SqliteEventStore(path)
    await store.create(HEADER)
    await store.close()
    conn = _raw(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    await _refused(path, rf"schema version {SCHEMA_VERSION + 1} is newer than this dsh .*upgrade dsh")


async def test_an_unstamped_non_empty_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = _raw(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.close()
    await _refused(path, "without a dsh version stamp")
    conn = _raw(path)
    assert conn.execute("SELECT name FROM sqlite_schema").fetchall() == [("users",)], "untouched"
    conn.close()


async def test_a_stamped_application_id_without_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    conn = _raw(path)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.close()
    await _refused(path, "without a dsh version stamp")


async def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are not the pages you are looking for" * 100)
    await _refused(path, "is not an SQLite database")


def _open_at_once(path: str, barrier: Any, errors: Any) -> None:
    barrier.wait()
    try:
        connect(Path(path)).close()
    except (DshError, sqlite3.Error) as exc:
        errors.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_a_new_database_at_once_all_get_it(tmp_path: Path) -> None:
    """Several processes (workers, two CLI commands) opening one new file together: one stamps
    it, every other sees it pristine or stamped — never half of each (red before: the stamp's
    three reads were separate, and a process saw the version without the id or the tables
    without the version: "not a dsh session database", 2 in 60 rounds of 4 here; and the WAL
    switch, which SQLite refuses at once while another connection makes it: "database is
    locked", about 1 in 180)."""
    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    for i in range(60):
        barrier = ctx.Barrier(4)
        procs = [
            ctx.Process(target=_open_at_once, args=(str(tmp_path / f"s{i}.db"), barrier, errors))
            for _ in range(4)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(30)
        assert all(proc.exitcode == 0 for proc in procs)
    refused = []
    while not errors.empty():
        refused.append(errors.get())
    assert refused == []


async def test_sessions_and_events_layout(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteEventStore(path)
    await store.create(HEADER.evolve(agent_preset="coder"))
    await store.append("s1", completed_turns(1))
    child = await store.fork("s1", child_id="kid", origin="subagent", created_at=9)
    await store.close()
    conn = _raw(path)
    rows = conn.execute(
        "SELECT id, parent_session, is_seeded, inherited_event_count, agent_preset FROM sessions ORDER BY id"
    ).fetchall()
    assert rows == [("kid", "s1", 1, 6, None), ("s1", None, 0, 0, "coder")]
    event = conn.execute(
        "SELECT type, time, data, surface_op FROM events WHERE session_id='s1' AND seq=2"
    ).fetchone()
    assert event == ("user/message", child.events[2].time, event[2], '"append"')
    # by reference: the child's own rows start at its cut (the marker); its prefix is s1's
    assert conn.execute("SELECT seq, data FROM events WHERE session_id='kid'").fetchall() == [
        (6, '{"inherited":true}')
    ]
    assert conn.execute("SELECT session_id, source, cut FROM fork_refs").fetchall() == [("kid", "s1", 6)]
    conn.close()


async def test_load_trusts_the_persisted_cut_and_refuses_a_tampered_one(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteEventStore(path)
    await store.create(HEADER)
    await store.append("s1", completed_turns(1))
    await store.fork("s1", child_id="kid")
    await store.create(HEADER.evolve(id="plain"))
    await store.close()
    conn = _raw(path)
    conn.execute("UPDATE sessions SET inherited_event_count = 3 WHERE id = 'kid'")
    conn.execute("UPDATE sessions SET is_seeded = 1 WHERE id = 'plain'")
    conn.close()
    store = SqliteEventStore(path)
    with pytest.raises(
        CorruptLogError, match=r"s\.db: session kid: explicit cut 3 does not match the marker at 6"
    ):
        await store.load("kid")
    with pytest.raises(CorruptLogError, match="isSeeded but no session/end-seed marker"):
        await store.load("plain")
    await store.close()


async def test_fork_is_one_transaction_copying_no_event(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    await store.create(HEADER)
    await store.append("s1", [*completed_turns(3), *open_turn(18, 4)])
    statements: list[str] = []
    await store._call(lambda conn: conn.set_trace_callback(statements.append))
    child = await store.branch("s1", child_id="kid")
    await store._call(lambda conn: conn.set_trace_callback(None))
    writes = statements[: statements.index("COMMIT") + 1]
    assert writes[0] == "BEGIN IMMEDIATE"
    assert not any("INSERT INTO events" in s and "SELECT" in s for s in writes), "no copy of the prefix"
    assert sum(s.startswith("INSERT INTO events") for s in writes) == 1, "the marker only"
    assert sum(s.startswith("INSERT INTO fork_refs") for s in writes) == 1
    assert sum(s.startswith("INSERT INTO sessions") for s in writes) == 1
    assert child.inherited_event_count == 18 and child.event_count == 19
    await store.close()


async def test_buffered_appends_commit_together(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    await store.create(HEADER)
    statements: list[str] = []
    await store._call(lambda conn: conn.set_trace_callback(statements.append))
    events = completed_turns(1)
    for event in events[:-1]:
        await store.append("s1", [event], durable=False)
    await store.append("s1", events[-1:])
    await store._call(lambda conn: conn.set_trace_callback(None))
    assert statements.count("BEGIN IMMEDIATE") == 1, "one write transaction for the whole turn"
    assert (await store.load("s1")).events == events
    await store.close()


async def test_a_second_writer_can_append_at_the_real_next_seq(tmp_path: Path) -> None:
    """Regression: a store whose cached next seq went stale (another process appended) must
    accept a batch at the database's real next seq instead of refusing it forever."""
    path = tmp_path / "shared.db"
    a, b = SqliteEventStore(path), SqliteEventStore(path)
    await a.create(SessionHeader(id="s", created_at=1))
    await b.append("s", [Event("turn/start", 0, 0, {"turn": 1})])  # b caches next seq 1
    await a.append("s", [Event("turn/end", 1, 0, {"turn": 1})])  # a appends; b's cache is stale
    await b.append("s", [Event("turn/start", 2, 0, {"turn": 2})])
    loaded = await a.load("s")
    assert [e.seq for e in loaded.events] == [0, 1, 2]
    await a.close()
    await b.close()


async def test_large_event_data_is_stored_compressed_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "z.db"
    store = SqliteEventStore(path)
    await store.create(SessionHeader(id="z", created_at=1))
    big = {"text": "delta " * 500, "n": 1}
    small = {"turn": 1}
    await store.append("z", [Event("turn/start", 0, 5, small), Event("session/title", 1, 6, {"title": big})])
    await store.close()
    conn = sqlite3.connect(path)
    kinds = conn.execute("SELECT seq, typeof(data), length(data) FROM events ORDER BY seq").fetchall()
    conn.close()
    assert kinds[0][1] == "text"
    assert kinds[1][1] == "blob" and kinds[1][2] < 500  # 3 KB of JSON, compressed
    again = SqliteEventStore(path)
    loaded = await again.load("z")
    assert loaded.events[1].data == {"title": big} and loaded.events[0].data == small
    await again.close()


async def test_a_corrupt_compressed_payload_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "z.db"
    store = SqliteEventStore(path)
    await store.create(SessionHeader(id="z", created_at=1))
    await store.append("z", [Event("session/title", 0, 6, {"title": "x" * 4000})])
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET data = x'00ff00ff' WHERE seq = 0")
    conn.commit()
    conn.close()
    again = SqliteEventStore(path)
    with pytest.raises(CorruptLogError, match=str(path)):
        await again.load("z")
    await again.close()

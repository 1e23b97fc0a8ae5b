"""SQLite reads a log's tail on the caller's thread when the connection is free
(``SqliteEventStore._inline``), never waiting there on a busy database.

A busy database cannot be made for a reader while the store's own connection is open (WAL
readers are blocked only by a connection in exclusive locking mode, which ours prevents, or
during another's recovery), so the busy case is injected at the connection."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from dsh.events import Event
from dsh.store import sqlite_schema
from dsh.store.contract_chunks import chunked_log
from dsh.store.contract_tools import sample_header
from dsh.store.sqlite import INLINE_TAIL, SqliteEventStore
from dsh.store.sqlite_schema import BUSY_TIMEOUT_S


async def _stored(path: Path, events: list[Event]) -> SqliteEventStore:
    store = SqliteEventStore(path)
    await store.create(sample_header("s"))
    for k in range(0, len(events), 512):
        await store.append("s", events[k : k + 512], durable=True)
    return store


async def test_reads_near_the_end_and_far_from_it_are_the_log(tmp_path: Path) -> None:
    """A parent and a fork child by reference: ``read_from`` at every kind of position (in
    the inherited prefix, across the cut, within and beyond the inline bound, past the end)
    is the whole log's slice."""
    store = await _stored(tmp_path / "s.db", chunked_log())
    child = (await store.fork("s", child_id="c")).header.id
    after = len((await store.load(child)).events)
    own = [e.with_seq(after + i) for i, e in enumerate(chunked_log()[:300])]
    await store.append(child, own, durable=True)
    for sid in ("s", child):
        log = (await store.load(sid)).events
        end = len(log)
        for seq in sorted({0, 3, end - INLINE_TAIL - 1, end - INLINE_TAIL, end - 50, end - 1, end, end + 5}):
            if seq >= 0:
                assert await store.read_from(sid, seq) == log[seq:], (sid, seq)
    await store.close()


class _Recording:
    """The store's connection, recording each read transaction's thread (the loop's or the
    worker's) and the busy timeout then in force; ``busy``: one begun on the loop's thread
    fails as on a locked database."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.begins: list[tuple[bool, int]] = []
        self.busy = False

    def __getattr__(self, name: str) -> object:
        return getattr(self.conn, name)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "BEGIN":
            on_loop = threading.current_thread() is threading.main_thread()
            self.begins.append((on_loop, self.timeout()))
            if self.busy and on_loop:
                exc = sqlite3.OperationalError("database is locked")
                exc.sqlite_errorname = "SQLITE_BUSY"
                raise exc
        return self.conn.execute(sql, *args)

    def timeout(self) -> int:
        timeout: int = self.conn.execute("PRAGMA busy_timeout").fetchone()[0]
        return timeout


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> list[_Recording]:
    made: list[_Recording] = []

    def connect(path: Path) -> _Recording:
        made.append(_Recording(sqlite_schema.connect(path)))
        return made[-1]

    monkeypatch.setattr("dsh.store.sqlite.connect", connect)
    return made


async def test_a_tail_is_read_on_the_callers_thread_without_a_busy_wait(
    tmp_path: Path, recording: list[_Recording]
) -> None:
    """A tail read runs on the loop's thread with the busy timeout off; a longer read, and
    whatever the worker does after tail reads, runs with it on. Back-to-back tail reads set
    it once (a PRAGMA each way was ~4% of a cold 50-event tail)."""
    store = await _stored(tmp_path / "s.db", chunked_log())
    log = (await store.load("s")).events
    (conn,) = recording
    conn.begins.clear()
    pragmas: list[str] = []

    def traced(sql: str) -> None:
        if sql.startswith("PRAGMA busy_timeout ="):  # set, not read (``_Recording.timeout``)
            pragmas.append(sql)

    conn.conn.set_trace_callback(traced)
    assert await store.read_from("s", len(log) - 5) == log[-5:]
    assert await store.read_from("s", len(log) - 6) == log[-6:]
    assert conn.begins == [(True, 0), (True, 0)]
    assert pragmas == ["PRAGMA busy_timeout = 0"]
    conn.begins.clear()
    assert await store.read_from("s", len(log) - INLINE_TAIL - 1) == log[-INLINE_TAIL - 1 :]
    assert conn.begins == [(True, 0), (False, int(BUSY_TIMEOUT_S * 1000))]
    assert (await store.load("s")).events == log  # the worker's, waiting again
    assert conn.begins[-1] == (False, int(BUSY_TIMEOUT_S * 1000))
    await store.close()


async def test_a_busy_database_sends_a_tail_read_to_the_worker(
    tmp_path: Path, recording: list[_Recording]
) -> None:
    """On a locked database the tail read does not wait on the loop: the worker reads it."""
    store = await _stored(tmp_path / "s.db", chunked_log())
    log = (await store.load("s")).events
    (conn,) = recording
    conn.busy = True
    conn.begins.clear()
    assert await store.read_from("s", len(log) - 5) == log[-5:]
    assert conn.begins == [(True, 0), (False, int(BUSY_TIMEOUT_S * 1000))]
    await store.close()

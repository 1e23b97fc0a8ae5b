"""SQLite packs a write's runs of stream chunks into rows (``dsh.store.chunk_runs``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dsh.errors import CorruptLogError
from dsh.events import Event
from dsh.events.fork import CUT_MARKER_DATA
from dsh.store.chunk_runs import RUN_MAX_EVENTS
from dsh.store.contract_chunks import CHUNKS, chunked_log
from dsh.store.contract_tools import sample_header
from dsh.store.memory import MemoryEventStore
from dsh.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, SqliteEventStore
from dsh.store.sqlite_schema import SCHEMA, event_row
from dsh.store.transfer import export_session, import_log


async def _stored(path: Path, events: list[Event], batch: int = 512) -> None:
    store = SqliteEventStore(path)
    await store.create(sample_header("s"))
    for k in range(0, len(events), batch):
        await store.append("s", events[k : k + batch], durable=True)
    await store.close()


def _rows(path: Path) -> list[tuple[int, str, int | None]]:
    sql = "SELECT seq, type, run_first FROM events WHERE session_id = 's' ORDER BY seq"
    return sqlite3.connect(path).execute(sql).fetchall()


async def test_a_batch_of_chunks_is_one_row_and_exports_byte_for_byte(tmp_path: Path) -> None:
    events = chunked_log()
    await _stored(tmp_path / "s.db", events)
    rows = _rows(tmp_path / "s.db")
    runs = [(first, seq) for seq, _, first in rows if first is not None]
    assert len(rows) < len(events) - CHUNKS + 10, "a few rows hold the chunks"
    assert all(seq - first < RUN_MAX_EVENTS for first, seq in runs), "a run holds 1,024 chunks at most"
    ignorable = next(e.seq for e in events if e.ignorable)
    assert (ignorable, "assistant/chunk", None) in rows, "an ignorable chunk stays a row of its own"
    copy = MemoryEventStore()
    await copy.create(sample_header("s"), events)
    store = SqliteEventStore(tmp_path / "s.db")
    export = await export_session(store, "s")
    await store.close()
    assert export == await export_session(copy, "s"), "the export is the unpacked log's, byte for byte"
    (tmp_path / "s.jsonl").write_bytes(export)
    again = SqliteEventStore(tmp_path / "t.db")
    await import_log(again, tmp_path / "s.jsonl")
    assert await export_session(again, "s") == export, "an import packs and re-exports the same bytes"
    await again.close()
    assert len(_rows(tmp_path / "t.db")) < len(events) - CHUNKS + 10, "an import packs its chunks"


async def test_a_fork_cut_inside_a_run_reads_the_run_up_to_the_cut(tmp_path: Path) -> None:
    """The fork rule cuts after a ``turn/end``, never inside a run; a reference row that does
    (another writer's, a later rule's) still reads the prefix to the cut exactly."""
    events = chunked_log()
    path = tmp_path / "s.db"
    await _stored(path, events)
    store = SqliteEventStore(path)
    await store.fork("s", child_id="c")
    await store.close()
    rows = _rows(path)
    first, last = next((first, seq) for seq, _, first in rows if first is not None)
    cut = (first + last) // 2
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE fork_refs SET cut = ? WHERE session_id = 'c'", (cut,))
        conn.execute("UPDATE sessions SET inherited_event_count = ? WHERE id = 'c'", (cut,))
        conn.execute("UPDATE events SET seq = ? WHERE session_id = 'c'", (cut,))
    store = SqliteEventStore(path)
    child = await store.load("c")
    assert child.events[:cut] == events[:cut], "the parent's events up to the cut, no further"
    assert child.events[cut:] == [Event("session/end-seed", cut, child.events[cut].time, CUT_MARKER_DATA)]
    surface = (await store.load("c", streams=False)).events
    assert [(e.seq, e.time) for e in surface] == [(e.seq, e.time) for e in child.events]
    assert await store.read_from("c", cut - 3) == child.events[cut - 3 :], "a tail across the cut"
    await store.close()


async def test_a_version_3_database_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for statement in SCHEMA:  # version 3's: without the run columns and their index
        if not statement.startswith("CREATE INDEX events_runs"):
            conn.execute("\n".join(line for line in statement.split("\n") if "run_" not in line))
    conn.execute("INSERT INTO sessions VALUES ('old', 1000, '/work', NULL, NULL, 0, NULL, 0, 0)")
    old = chunked_log()[:60]
    for e in old:
        conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", event_row("old", e))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    store = SqliteEventStore(path)
    assert (await store.load("old")).events == old, "the version-3 rows read as before"
    await store.create(sample_header("new"), chunked_log())
    assert (await store.load("new")).events == chunked_log(), "new writes are packed"
    await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    packed = "SELECT session_id, count(*) FROM events WHERE run_first IS NOT NULL GROUP BY session_id"
    assert [sid for sid, _ in conn.execute(packed)] == ["new"]


@pytest.mark.parametrize(
    ("column", "value", "streams"), [("data", b"\x00\xff", True), ("run_times", b"xx", False)]
)
async def test_a_corrupt_packed_row_is_one_line_naming_the_session(
    tmp_path: Path, column: str, value: bytes, streams: bool
) -> None:
    path = tmp_path / "s.db"
    await _stored(path, chunked_log())
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE events SET {column} = ? WHERE run_first IS NOT NULL", (value,))
    store = SqliteEventStore(path)
    with pytest.raises(CorruptLogError) as caught:
        loaded = await store.load("s", streams=streams)
        list(loaded.events)  # a surface read decodes a run's times when its chunks are read
    await store.close()
    message = str(caught.value)
    assert "\n" not in message and "session s:" in message and "packed chunk run" in message
    assert message.startswith(str(path))

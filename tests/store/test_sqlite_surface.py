"""SQLite keeps a settlement's stream apart: a surface read never reads it; version 2 migrates."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dsh.store.contract_surface import long_log
from dsh.store.contract_tools import sample_header
from dsh.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, SqliteEventStore
from dsh.store.transfer import export_session, import_log

_V2_EVENTS = """CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id), seq INTEGER NOT NULL, type TEXT NOT NULL,
    time INTEGER NOT NULL, data ANY NOT NULL CHECK (typeof(data) IN ('text', 'blob')),
    surface_op TEXT, source_event_seqs TEXT,
    ignorable INTEGER NOT NULL DEFAULT 0 CHECK (ignorable IN (0, 1)), PRIMARY KEY (session_id, seq)
) STRICT"""


async def test_a_long_stream_is_stored_apart_and_left_out_of_a_surface_read(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    events = long_log()
    await store.create(sample_header("s"), events)
    surface = (await store.load("s", streams=False)).events
    assert [e.seq for e in surface if e.partial] == [3, 9, 12], "the settlements and the chunk"
    assert "stream" not in surface[9].data and surface[9].data["message"] == events[9].data["message"]
    export = await export_session(store, "s")
    await store.close()
    rows = sqlite3.connect(tmp_path / "s.db").execute("SELECT seq, tail IS NOT NULL FROM events").fetchall()
    assert [seq for seq, apart in rows if apart] == [3, 9], "only the settlements keep their streams apart"
    (tmp_path / "s.jsonl").write_bytes(export)
    again = SqliteEventStore(tmp_path / "t.db")
    await import_log(again, tmp_path / "s.jsonl")
    assert await export_session(again, "s") == export, "the export is byte-identical"
    child = await again.fork("s", child_id="c")
    assert child.events[:12] == events[:12], "a fork copies the kept-apart streams"
    await again.close()


async def test_a_version_2_database_is_migrated_in_place(tmp_path: Path) -> None:
    from dsh.store.sqlite_schema import SCHEMA

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for statement in SCHEMA:
        if not statement.startswith("CREATE INDEX events_runs"):  # version 4's index of packed runs
            conn.execute(_V2_EVENTS if statement.startswith("CREATE TABLE events") else statement)
    conn.execute("INSERT INTO sessions VALUES ('old', 1000, '/work', NULL, NULL, 0, NULL, 0, 0)")
    conn.execute("INSERT INTO events VALUES ('old', 0, 'turn/start', 5, '{\"turn\":1}', NULL, NULL, 0)")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    store = SqliteEventStore(path)
    assert [e.data for e in (await store.load("old")).events] == [{"turn": 1}]
    await store.create(sample_header("new"), long_log())
    assert (await store.load("new")).events == long_log()
    await store.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4

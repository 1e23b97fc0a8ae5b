"""``dsh sessions list -n N`` reads only the N sessions it shows; plain columns for any count."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from dsh.cli.columns import Column, layout
from dsh.events import SessionHeader
from dsh.store.samples import completed_turns
from dsh.store.sqlite import SqliteEventStore
from tests.cli.conftest import Dsh, assert_user_error


async def _three(db: Path) -> None:
    store = SqliteEventStore(db)
    for i, sid in enumerate(("oldest", "middle", "newest")):
        await store.create(SessionHeader(id=sid, created_at=1_000 + i, cwd="/work"), completed_turns(1))
    await store.close()


def test_list_n_reads_only_the_sessions_it_shows(dsh_sqlite: Dsh) -> None:
    db = Path(dsh_sqlite.store.removeprefix("sqlite:"))
    db.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(_three(db))
    with sqlite3.connect(db) as conn:  # the oldest session's events cannot be read any more
        conn.execute("UPDATE events SET data = '{bad' WHERE session_id = 'oldest' AND seq = 2")
    shown = dsh_sqlite("sessions", "list", "-n", "2").ok().stdout.splitlines()
    assert [line.split()[0] for line in shown[1:]] == ["middle", "newest"]
    rows = dsh_sqlite("sessions", "list", "-n", "2", "--json").json()
    assert [row["id"] for row in rows] == ["middle", "newest"]
    assert_user_error(dsh_sqlite("sessions", "list"), "oldest", "bad JSON")


def test_columns_align_cap_and_cut_the_flexible_one() -> None:
    columns = (Column("id"), Column("n", right=True), Column("model", max_width=5), Column("t", flex=True))
    rows = [["a", "7", "deepseek-chat", "一二三四五六七八九十一二三四五六"], ["bbb", "10", "m", "short"]]
    lines = layout(columns, rows, 30)
    assert lines == [
        "id    n  model  t",
        "a     7  deep…  一二三四五六…",
        "bbb  10  m      short",
    ]
    assert all(line == line.rstrip() for line in lines)

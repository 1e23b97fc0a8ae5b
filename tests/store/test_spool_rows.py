"""A stored spool batch that does not decode is skipped, never an error (the spool is display
only): deltas that are not a list of text or reasoning deltas, a line that is not JSON, a
missing stream id. The batches around it still come back, in order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dsh.events.chunks import Chunk
from dsh.store.jsonl import JsonlEventStore
from dsh.store.jsonl_spool import spool_path
from dsh.store.spool import SpoolBatch
from dsh.store.sqlite import SqliteEventStore
from dsh.store.sqlite_spool import SPOOL_TABLE

GOOD: tuple[Chunk, ...] = ({"type": "text-delta", "index": 0, "text": "hi"},)

BAD_LINES = [
    b'{"stream":"x","at":1,"first":0,"chunks":[{"type":"finish","reason":{"kind":"stop"}}]}',
    b'{"stream":"x","at":1,"first":0,"chunks":[{"type":"text-delta","index":"0","text":"no"}]}',
    b'{"stream":"x","at":1,"first":0,"chunks":{"type":"text-delta"}}',
    b'{"at":1,"first":0,"chunks":[{"type":"text-delta","index":0,"text":"no"}]}',
    b"not json",
]


@pytest.mark.parametrize("bad", BAD_LINES)
async def test_a_jsonl_spool_line_that_does_not_decode_is_skipped(bad: bytes, tmp_path: Path) -> None:
    store = JsonlEventStore(tmp_path)
    await store.spool("s", SpoolBatch("a", 1, 0, GOOD))
    with spool_path(tmp_path, "s").open("ab") as file:
        file.write(bad + b"\n")
    await store.spool("s", SpoolBatch("b", 2, 0, GOOD))
    rows = await store.spooled("s")
    assert [r.batch.stream for r in rows] == ["a", "b"]
    assert rows[1].batch.chunks == GOOD
    await store.close()


@pytest.mark.parametrize(
    "chunks",
    [
        '[{"type":"finish","reason":{"kind":"stop"}}]',
        '[{"type":"text-delta","index":0,"text":1}]',
        '{"type":"text-delta"}',
        "not json",
    ],
)
async def test_a_sqlite_spool_row_that_does_not_decode_is_skipped(chunks: str, tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    for stream in ("a", "bad", "b"):
        await store.spool("s", SpoolBatch(stream, 1, 0, GOOD))
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute(f"UPDATE {SPOOL_TABLE} SET chunks = ? WHERE stream = 'bad'", (chunks,))
    rows = await store.spooled("s")
    assert [r.batch.stream for r in rows] == ["a", "b"]
    await store.close()

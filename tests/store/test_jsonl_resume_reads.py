"""A JSONL session resumed and appended to is read once: the writer starts from the load's
read when the file is unchanged since (its key: inode, size, mtime), and reads it again when
it is not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.errors import SeqConflictError, SessionTruncatedError
from dsh.events import SessionHeader
from dsh.store import JsonlEventStore
from dsh.store.samples import completed_turns

HEADER = SessionHeader(id="s1", created_at=7, cwd="/w")
COMPRESSIONS = ["none", "zstd"]


async def _stored(root: Path, compression: str, turns: int = 3) -> int:
    """A session of ``turns`` completed turns, written by a store since closed; its event count."""
    store = JsonlEventStore(root, compression=compression)
    events = completed_turns(turns)
    await store.create(HEADER, events)
    await store.close()
    return len(events)


@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_an_append_after_a_load_reads_the_file_once(
    tmp_path: Path, compression: str, jsonl_decodes: list[str]
) -> None:
    count = await _stored(tmp_path, compression)
    jsonl_decodes.clear()
    store = JsonlEventStore(tmp_path, compression=compression)  # a new process resuming it
    loaded = await store.load("s1")
    await store.append("s1", completed_turns(1, start_seq=count, first_turn=4), durable=True)
    assert len(jsonl_decodes) == 1, f"the load's read is the writer's: {jsonl_decodes}"
    await store.close()
    again = await JsonlEventStore(tmp_path, compression=compression).load("s1")
    assert [e.seq for e in again.events] == list(range(len(again.events)))
    assert again.events[: len(loaded.events)] == loaded.events


@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_an_append_made_elsewhere_after_the_load_is_seen(tmp_path: Path, compression: str) -> None:
    count = await _stored(tmp_path, compression)
    mine = JsonlEventStore(tmp_path, compression=compression)
    await mine.load("s1")
    other = JsonlEventStore(tmp_path, compression=compression)  # another process, meanwhile
    more = completed_turns(1, start_seq=count, first_turn=4)
    await other.append("s1", more, durable=True)
    await other.close()
    with pytest.raises(SeqConflictError):
        await mine.append("s1", completed_turns(1, start_seq=count, first_turn=4), durable=True)
    await mine.append("s1", completed_turns(1, start_seq=count + len(more), first_turn=5), durable=True)
    await mine.close()
    loaded = await JsonlEventStore(tmp_path, compression=compression).load("s1")
    assert [e.seq for e in loaded.events] == list(range(count + 2 * len(more)))


@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_a_file_cut_after_the_load_is_not_appended_to(tmp_path: Path, compression: str) -> None:
    count = await _stored(tmp_path, compression)
    mine = JsonlEventStore(tmp_path, compression=compression)
    await mine.load("s1")
    path = mine.path_for("s1")
    with open(path, "r+b") as f:  # its last bytes lost (its seal still names them)
        os.ftruncate(f.fileno(), path.stat().st_size - 40)
    with pytest.raises(SessionTruncatedError, match="refusing to append"):
        await mine.append("s1", completed_turns(1, start_seq=count, first_turn=4), durable=True)
    await mine.close()

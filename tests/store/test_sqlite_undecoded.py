"""A SQLite surface read leaves payloads undecoded until first read: the same events, the
same refusals."""

from __future__ import annotations

import copy
import pickle
import sqlite3
from pathlib import Path

import pytest

from dsh.errors import CorruptLogError
from dsh.events import read_event
from dsh.store import SqliteEventStore
from dsh.store.contract_surface import long_log
from dsh.store.contract_tools import sample_header
from dsh.store.samples import completed_turns


async def test_a_surface_read_equals_the_whole_read_but_the_deferred_bytes(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    await store.create(sample_header("s"), long_log())
    surface = (await store.load("s", streams=False)).events
    whole = (await store.load("s")).events
    await store.close()
    kept = [i for i, e in enumerate(surface) if not e.partial]
    assert [surface[i] for i in kept] == [whole[i] for i in kept]
    assert [copy.deepcopy(e) for e in surface] == surface
    again = (await SqliteEventStore(tmp_path / "s.db").load("s", streams=False)).events
    assert [pickle.loads(pickle.dumps(e)) for e in again] == again == surface, "a pickle carries the data"
    assert [copy.copy(e).data for e in again] == [e.data for e in surface], "so does a copy"


@pytest.mark.parametrize("seq", [6, 8], ids=["off-the-surface", "model-visible"])
async def test_a_surface_read_refuses_a_payload_that_is_not_json_naming_it(tmp_path: Path, seq: int) -> None:
    path = tmp_path / "s.db"
    store = SqliteEventStore(path)
    await store.create(sample_header("s"), completed_turns(2))
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE events SET data = '{\"turn\": 1' WHERE seq = ?", (seq,))
    again = SqliteEventStore(path)
    with pytest.raises(CorruptLogError, match=rf"session s, seq {seq}: bad JSON") as info:
        await again.load("s", streams=False)
    assert str(path) in str(info.value)
    await again.close()


def test_an_undecoded_payload_is_decoded_once_when_read() -> None:
    event = read_event("turn/start", 4, 9, '{"turn":2}', None, None, False, False, undecoded=True)
    assert event.data == {"turn": 2}
    assert event.data is event.data, "decoded once, then kept"
    bad = read_event("turn/start", 5, 9, '{"turn":', None, None, False, False, undecoded=True)
    with pytest.raises(CorruptLogError, match="turn/start#5: bad JSON"):
        _ = bad.data
    with pytest.raises(AttributeError):
        getattr(event, "no_such_field")  # noqa: B009 - an unknown attribute is still an error

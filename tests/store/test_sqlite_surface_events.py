"""SQLite's surface read builds its events apart from ``Event.__init__`` (``dsh.events.read_event``)
and keeps one string per known type: the same events, the same refusals."""

from __future__ import annotations

import copy
import pickle
import sqlite3
from pathlib import Path

import pytest

from dsh.errors import CorruptLogError
from dsh.events import Event, read_event
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
    assert surface[9].partial and not surface[8].partial
    kept = [i for i, e in enumerate(surface) if not e.partial]
    assert [surface[i] for i in kept] == [whole[i] for i in kept] == [long_log()[i] for i in kept]
    assert [copy.deepcopy(e) for e in surface] == surface
    assert [pickle.loads(pickle.dumps(e)) for e in surface] == surface


async def test_a_read_keeps_one_string_per_known_type(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    await store.create(sample_header("s"), completed_turns(3))
    for streams in (False, True):
        events = (await store.load("s", streams=streams)).events
        starts = [e.type for e in events if e.type == "turn/start"]
        assert len(starts) == 3 and all(t is starts[0] for t in starts), "not a string per row"
    await store.close()


@pytest.mark.parametrize("seq", [6, 8], ids=["turn-mark", "model-visible"])
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


def test_read_event_builds_the_event_init_would() -> None:
    built = read_event("turn/start", 4, 9, {"turn": 2}, "append", (1, 2), True, True)
    assert built == Event("turn/start", 4, 9, {"turn": 2}, "append", (1, 2), True, partial=True)
    assert built.partial and built.data_json is None and built.line_json is None
    plain = read_event("turn/start", 4, 9, {"turn": 2}, None, None, False, False)
    assert repr(plain) == repr(Event("turn/start", 4, 9, {"turn": 2}))
    assert not plain.partial and not plain.ignorable

"""``--continue`` in a JSONL store (``FindsLatest``): each file's header and the time on its last
line where its seal vouches for it, else the file read whole — always what the whole listing's
rule (``latest_listed``) finds."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from dsh.events import Event, SessionHeader
from dsh.store import JsonlEventStore, LoadedSession
from dsh.store.newest import latest_listed, latest_top_level
from dsh.store.notices import warnings_to
from dsh.store.samples import completed_turns
from dsh.store.seal import seal_path

CWD = "/w"


def _turn(time: int, start_seq: int = 0) -> list[Event]:
    turn = completed_turns(1, start_seq=start_seq, first_turn=1 + start_seq)
    return [Event(e.type, e.seq, time, e.data, e.surface_op) for e in turn]


async def _store(root: Path, times: dict[str, int | None], compression: str = "none") -> JsonlEventStore:
    """Sessions in ``CWD`` created at 1000, each with one turn at its time (``None``: no event)."""
    store = JsonlEventStore(root, compression=compression)
    await store.create_batch(
        [
            LoadedSession(SessionHeader(id=sid, created_at=1_000, cwd=CWD), 0, [] if t is None else _turn(t))
            for sid, t in times.items()
        ]
    )
    return store


@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_the_latest_is_the_listings_choice(tmp_path: Path, compression: str) -> None:
    rng = random.Random(5)
    times: dict[str, int | None] = {
        f"s{i:02d}": rng.choice([None, rng.randrange(900, 1_200)]) for i in range(40)
    }
    store = await _store(tmp_path, times, compression)
    expected = max(((1_000 if t is None else t), 1_000, sid) for sid, t in times.items())[2]
    assert await latest_top_level(store, CWD) == expected == await latest_listed(store, CWD)
    assert await latest_top_level(store, "/elsewhere") is None
    await store.close()


async def test_a_sealed_plain_file_is_read_from_its_end(tmp_path: Path, jsonl_decodes: list[str]) -> None:
    store = await _store(tmp_path, {"a": 5_000, "b": 6_000, "c": None})
    await store.close()
    jsonl_decodes.clear()
    fresh = JsonlEventStore(tmp_path)
    assert await latest_top_level(fresh, CWD) == "b"
    assert jsonl_decodes == [], f"no log decoded whole: {jsonl_decodes}"
    await fresh.close()


async def test_lines_after_the_sealed_end_count(tmp_path: Path) -> None:
    """A seal lags the file after a crash between the write and the seal's: the lines after
    it are the session's latest, and the file is read whole to see them."""
    store = await _store(tmp_path, {"a": 5_000, "b": 6_000})
    await store.close()
    path = tmp_path / "a.jsonl"
    extra = b"".join(orjson.dumps(e.to_wire()) + b"\n" for e in _turn(7_000, start_seq=len(_turn(0))))
    with path.open("ab") as f:  # written, its seal not (yet) rewritten
        f.write(extra)
    fresh = JsonlEventStore(tmp_path)
    assert await latest_top_level(fresh, CWD) == "a" == await latest_listed(fresh, CWD)
    await fresh.close()


async def test_a_file_without_a_seal_is_read_whole(tmp_path: Path) -> None:
    store = await _store(tmp_path, {"a": 5_000, "b": 6_000})
    await store.close()
    seal_path(tmp_path / "b.jsonl").unlink()  # an older dsh's file
    fresh = JsonlEventStore(tmp_path)
    assert await latest_top_level(fresh, CWD) == "b" == await latest_listed(fresh, CWD)
    await fresh.close()


async def test_a_last_line_changed_under_its_seal_is_skipped_as_the_listing_does(tmp_path: Path) -> None:
    store = await _store(tmp_path, {"a": 5_000, "b": 6_000})
    await store.close()
    path = tmp_path / "b.jsonl"
    data = path.read_bytes()
    cut = data.rfind(b'"time":6000')
    path.write_bytes(data[:cut] + b'"time":9000' + data[cut + len(b'"time":6000') :])  # same length
    warned: list[str] = []
    fresh = JsonlEventStore(tmp_path)
    with warnings_to(warned.append):
        found = await latest_top_level(fresh, CWD)
    assert found == "a" == await latest_listed(fresh, CWD), "b is corrupt: skipped, never taken at 9000"
    assert any("b.jsonl" in w for w in warned), warned
    await fresh.close()


async def test_bytes_after_the_sealed_end_send_the_file_to_a_whole_read(tmp_path: Path) -> None:
    """Even when the file's last line is the sealed one again (written twice: a corrupt log
    the listing skips), bytes past the sealed end are not vouched for."""
    store = await _store(tmp_path, {"a": 5_000, "b": 6_000})
    await store.close()
    path = tmp_path / "b.jsonl"
    data = path.read_bytes()
    last = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]
    path.write_bytes(data + last)
    fresh = JsonlEventStore(tmp_path)
    with warnings_to(lambda _line: None):
        assert await latest_top_level(fresh, CWD) == "a" == await latest_listed(fresh, CWD)
    await fresh.close()

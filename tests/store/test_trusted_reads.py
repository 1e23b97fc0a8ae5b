"""A store's read of what it wrote itself does not check each payload's shape again: the
events were checked when appended or imported (issue #40: 15,000 settlements re-checked
cost a 5,000-call replay's read-back 0.3 s). A log file read from disk still is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.errors import CorruptLogError
from dsh.events import SessionHeader
from dsh.store import codec
from dsh.store.base import LoadedSession
from dsh.store.logfile import decode_log, encode_log
from dsh.store.memory import MemoryEventStore
from dsh.store.samples import completed_turns
from dsh.store.sqlite import SqliteEventStore


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    checked: list[str] = []
    real = codec.check_data_shape

    def counting(etype: str, seq: int, data: object, where: str) -> None:
        checked.append(etype)
        real(etype, seq, data, where)

    monkeypatch.setattr(codec, "check_data_shape", counting)
    return checked


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_store_reads_its_own_events_without_checking_their_shapes_again(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryEventStore() if kind == "memory" else SqliteEventStore(tmp_path / "s.db")
    header = SessionHeader(id="s", created_at=1, cwd="/w")
    await store.create(header, completed_turns(2))
    checked = _counting(monkeypatch)
    loaded = await store.load("s")
    assert len(loaded.events) == len(completed_turns(2))
    assert await store.read_from("s", 1)
    assert checked == []
    await store.close()


def test_a_log_file_is_still_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    data = encode_log(LoadedSession(SessionHeader(id="s", created_at=1, cwd="/w"), 0, completed_turns(1)))
    checked = _counting(monkeypatch)
    decode_log(data, "s.jsonl")
    assert checked
    with pytest.raises(CorruptLogError, match=r"s\.jsonl, line 2: .*data\.turn must be an integer"):
        decode_log(data.replace(b'"turn":1', b'"turn":"one"', 1), "s.jsonl")

"""The version-0 reader: packed-row expansion, the header mapping and the import rewrite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.errors import CorruptLogError, InvalidEventError, UnsupportedFormatError
from dsh.events import Event
from dsh.store import MemoryEventStore, decode_log, import_log
from dsh.store.codec import encode_event_checked
from dsh.store.legacy import MAX_SAFE, decode_row_v0, expand_packed_row

from .v0pack import pack

V0_HEADER = {"type": "session", "version": 0, "id": "s0", "createdAt": 5, "cwd": "/w", "delegationDepth": 0}


def v0_bytes(records: list[dict[str, Any]], **header: Any) -> bytes:
    lines = [orjson.dumps({**V0_HEADER, **header}), *(orjson.dumps(r) for r in records)]
    return b"\n".join(lines) + b"\n"


def test_reasoning_row_expands_with_running_times_and_exact_key_order() -> None:
    row = {
        "type": "reasoning-chunks",
        "seq0": 10,
        "time0": 1000,
        "data": {"turn": 1, "step": 2, "index": 0, "dt": [0, 33, -5], "texts": ["The", " user", "", " x"]},
    }
    events = expand_packed_row(row, "row")
    assert [e.seq for e in events] == [10, 11, 12, 13]
    assert [e.time for e in events] == [1000, 1000, 1033, 1028]
    assert encode_event_checked(events[2]) == (
        b'{"type":"assistant/chunk","seq":12,"time":1033,"data":{"turn":1,"step":2,'
        b'"chunk":{"type":"reasoning-delta","index":0,"text":""}}}'
    )


@pytest.mark.parametrize("named", [True, False])
def test_tool_call_row_keeps_name_only_when_present(named: bool) -> None:
    data: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "index": 1,
        "dt": [1, 2],
        "id": "call_1",
        "args": ["", "{", "}"],
    }
    if named:
        data["name"] = "bash"
    events = expand_packed_row({"type": "tool-call-chunks", "seq0": 0, "time0": 0, "data": data}, "row")
    chunk = events[1].data["chunk"]
    expected = (
        ["type", "index", "id", "name", "argumentsDelta"]
        if named
        else ["type", "index", "id", "argumentsDelta"]
    )
    assert list(chunk) == expected
    assert [e.data["chunk"]["argumentsDelta"] for e in events] == ["", "{", "}"]
    assert list(events[0].data) == ["turn", "step", "chunk"]


def _row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "type": "text-chunks",
        "seq0": 3,
        "time0": 7,
        "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]},
    }
    data_changes = changes.pop("data", {})
    row.update(changes)
    row["data"] = {**row["data"], **data_changes}
    for key in [k for k, v in row["data"].items() if v is _DROP]:
        del row["data"][key]
    return row


_DROP = object()


@pytest.mark.parametrize(
    "row",
    [
        {**_row(), "extra": 1},
        {k: v for k, v in _row().items() if k != "time0"},
        _row(seq0=-1),
        _row(seq0=MAX_SAFE + 1),
        _row(seq0=1.0),
        _row(time0=7.5),
        _row(time0=MAX_SAFE + 1),
        _row(data={"dt": [1]}),
        _row(data={"dt": [1, "2"]}),
        _row(data={"dt": [1, MAX_SAFE + 1]}),
        _row(data={"texts": []}),
        _row(data={"texts": ["a", 1, "c"]}),
        _row(data={"texts": "abc"}),
        _row(data={"turn": True}),
        _row(data={"index": "0"}),
        _row(data={"extra": 1}),
        _row(data={"texts": _DROP}),
        _row(time0=MAX_SAFE, data={"dt": [1, 1]}),
        _row(data={"turn": 1}, type="tool-call-chunks"),
        {
            **_row(type="tool-call-chunks"),
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "id": 5, "args": ["x"]},
        },
        {
            **_row(type="tool-call-chunks"),
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "id": "c", "name": None, "args": ["x"]},
        },
    ],
)
def test_malformed_packed_rows_are_errors(row: dict[str, Any]) -> None:
    with pytest.raises(InvalidEventError):
        decode_row_v0(row, "row")


def test_a_malformed_row_in_a_file_names_the_line() -> None:
    data = v0_bytes(
        [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}, _row(seq0=1, data={"dt": [1]})]
    )
    with pytest.raises(CorruptLogError, match=r"s0\.jsonl, line 3: .*dt"):
        decode_log(data, "s0.jsonl")


def test_unknown_v0_type_is_refused() -> None:
    data = v0_bytes([{"type": "mode/set", "seq": 0, "time": 0, "data": {}}])
    with pytest.raises(UnsupportedFormatError, match=r"line 2: .*'mode/set'"):
        decode_log(data, "x.jsonl")


# -- packing and expansion are inverse (Hypothesis) ------------------------------------------

_texts = st.lists(st.text(alphabet='ab "\\é✓\n', max_size=3), min_size=1, max_size=6)
_gaps = st.sampled_from([-3, 0, 1, 29, 117_223_942])


@st.composite
def chunk_runs(draw: st.DrawFn) -> list[Event]:
    """Chunk events in runs: deltas of every kind (some runs too short to pack) and other chunks."""
    events: list[Event] = []
    time = draw(st.integers(-(10**6), 10**12))
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(
            st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta", "block-start", "finish"])
        )
        turn, step, index = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(0, 2))
        chunks: list[dict[str, Any]]
        if kind in ("text-delta", "reasoning-delta"):
            chunks = [{"type": kind, "index": index, "text": t} for t in draw(_texts)]
        elif kind == "tool-call-delta":
            call_id = draw(st.sampled_from(["c1", "c2"]))
            name = draw(st.sampled_from([None, "bash", "read"]))
            chunks = []
            for args in draw(_texts):
                chunk: dict[str, Any] = {"type": kind, "index": index, "id": call_id}
                if name is not None:
                    chunk["name"] = name
                chunk["argumentsDelta"] = args
                chunks.append(chunk)
        elif kind == "block-start":
            chunks = [{"type": kind, "index": index, "blockType": "text"}]
        else:
            chunks = [{"type": kind, "reason": {"kind": "stop"}}]
        for chunk in chunks:
            events.append(
                Event("assistant/chunk", len(events), time, {"turn": turn, "step": step, "chunk": chunk})
            )
            time += draw(_gaps)
    return events


@given(chunk_runs())
def test_pack_then_expand_is_identity(events: list[Event]) -> None:
    records = pack(events)
    expanded = [e for record in records for e in decode_row_v0(record, "record")]
    assert expanded == events
    assert [encode_event_checked(e) for e in expanded] == [encode_event_checked(e) for e in events]
    decoded = decode_log(v0_bytes(records), "prop.jsonl")
    assert decoded.events == events


def test_packing_happens_for_long_runs_only() -> None:
    deltas = [
        Event(
            "assistant/chunk",
            i,
            i,
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}},
        )
        for i in range(5)
    ]
    assert [r["type"] for r in pack(deltas)] == ["text-chunks"]
    assert [r["type"] for r in pack(deltas[:2])] == ["assistant/chunk", "assistant/chunk"]


# -- header and the import rewrite ---------------------------------------------------------


def _seeded_records(marker_at: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [
        {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
        {"type": "turn/end", "seq": 1, "time": 2, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        {"type": "session/end-seed", "seq": 2, "time": 3, "data": {}},
        {"type": "approval/policy", "seq": 3, "time": 4, "data": {"policy": "never"}},
    ]
    if marker_at != 2:
        records[2], records[marker_at] = {**records[marker_at], "seq": 2}, {**records[2], "seq": marker_at}
    return records


def test_seed_length_maps_to_is_seeded_and_cut() -> None:
    decoded = decode_log(v0_bytes(_seeded_records(2), seedLength=2), "child.jsonl")
    assert decoded.header.is_seeded and decoded.inherited_event_count == 2
    assert decoded.as_loaded().events[2].data == {}, "inspection keeps the log verbatim"
    imported = decoded.for_import()
    assert imported.events[2].data == {"inherited": True}
    assert [e for i, e in enumerate(imported.events) if i != 2] == [
        e for i, e in enumerate(decoded.events) if i != 2
    ]
    unseeded = decode_log(v0_bytes(_seeded_records(2)), "spawn.jsonl")
    assert not unseeded.header.is_seeded and unseeded.inherited_event_count == 0
    assert unseeded.for_import().events == unseeded.events, "an untagged end-seed stays untagged"


def test_seed_length_zero_is_seeded_with_cut_zero() -> None:
    records = [{"type": "session/end-seed", "seq": 0, "time": 0, "data": {}}]
    decoded = decode_log(v0_bytes(records, seedLength=0), "z.jsonl")
    assert decoded.header.is_seeded and decoded.inherited_event_count == 0
    assert decoded.for_import().events[0].data == {"inherited": True}


def test_seed_length_beyond_the_log_is_corrupt() -> None:
    with pytest.raises(CorruptLogError, match="seedLength 9 exceeds"):
        decode_log(v0_bytes(_seeded_records(2), seedLength=9), "c.jsonl")
    with pytest.raises(CorruptLogError, match="seedLength"):
        decode_log(v0_bytes(_seeded_records(2), seedLength=-1), "c.jsonl")


async def test_misplaced_marker_can_be_inspected_but_not_imported(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_bytes(v0_bytes(_seeded_records(3), seedLength=2))
    decoded = decode_log(path.read_bytes(), str(path))
    assert decoded.inherited_event_count == 2 and len(decoded.as_loaded().events) == 4
    assert decoded.import_problem is not None and "seedLength 2" in decoded.import_problem
    with pytest.raises(UnsupportedFormatError, match=r"odd\.jsonl: cannot import .*seedLength 2"):
        decoded.for_import()
    store = MemoryEventStore()
    with pytest.raises(UnsupportedFormatError, match="cannot import"):
        await import_log(store, path)
    assert await store.list_sessions() == []
    at_end = decode_log(v0_bytes(_seeded_records(2), seedLength=4), "end.jsonl")
    assert at_end.import_problem is not None


def test_a_tagged_marker_in_an_unseeded_v0_log_is_refused_on_import() -> None:
    records = _seeded_records(2)
    records[2] = {**records[2], "data": {"inherited": True}}
    decoded = decode_log(v0_bytes(records), "t.jsonl")
    with pytest.raises(UnsupportedFormatError, match="cannot import"):
        decoded.for_import()

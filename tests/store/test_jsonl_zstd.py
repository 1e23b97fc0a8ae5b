"""``JsonlEventStore(root, compression="zstd")`` specifics: the frame layout, torn and corrupt
frames, the seal over the plaintext lines, single-encoding roots and crash safety.

Real files in a temp directory, through the public store API; frames are walked here with
``zstandard`` directly, independent of dsh's reader. (The contract suite runs against this
mode too: ``tests/store/conftest.py``, backend ``jsonl-zstd``.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from dsh.errors import CorruptLogError, SessionTruncatedError, UnsupportedFormatError, UsageError
from dsh.events import Event, SessionHeader
from dsh.store import JsonlEventStore, LoadedSession, encode_log, open_store, read_log_file
from dsh.store.codec import encode_event_lines, encode_header_line
from dsh.store.notices import warnings_to
from dsh.store.samples import completed_turns, open_turn
from dsh.store.seal import read_seal

HEADER = SessionHeader(id="s1", created_at=1, cwd="/w")
EVENTS = completed_turns(3)  # 18 events, turns of 6


def _frames(data: bytes) -> list[bytes]:
    """Each complete frame's content (an incomplete last frame is left out)."""
    out: list[bytes] = []
    while data:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        content = dobj.decompress(data)
        if not dobj.eof:
            break
        out.append(content)
        data = dobj.unused_data
    return out


def _frame_ends(data: bytes) -> list[int]:
    ends, rest = [], data
    while rest:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        dobj.decompress(rest)
        rest = dobj.unused_data
        ends.append(len(data) - len(rest))
    return ends


def _frame(plain: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(plain)


async def _three_turns(root: Path) -> Path:
    store = JsonlEventStore(root, compression="zstd")
    await store.create(HEADER)
    for first in (0, 6, 12):
        await store.append("s1", EVENTS[first : first + 6])
    await store.close()
    return root / "s1.jsonl.zst"


async def test_a_header_frame_then_one_frame_per_durable_append(tmp_path: Path) -> None:
    store = JsonlEventStore(tmp_path, compression="zstd")
    await store.create(HEADER)
    await store.append("s1", EVENTS[:6])
    await store.append("s1", EVENTS[6:9], durable=False)  # buffered: written with the next durable one
    await store.append("s1", EVENTS[9:12])
    await store.close()
    path = tmp_path / "s1.jsonl.zst"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".s1.jsonl.zst.seal", path.name]
    frames = _frames(path.read_bytes())
    assert frames == [
        encode_header_line(HEADER),
        encode_event_lines(EVENTS[:6]),
        encode_event_lines(EVENTS[6:12]),
    ]
    assert b"".join(frames) == encode_log(LoadedSession(HEADER, 0, EVENTS[:12]))
    assert (await read_log_file(path)).events == EVENTS[:12], (
        "a store file is a .jsonl.zst log as export writes"
    )
    store = JsonlEventStore(tmp_path, compression="zstd")
    assert (await store.load("s1")).events == EVENTS[:12]
    await store.close()


async def test_a_seeded_create_is_the_header_frame_then_the_seed_frame(tmp_path: Path) -> None:
    store = JsonlEventStore(tmp_path, compression="zstd")
    await store.create(HEADER)
    await store.append("s1", EVENTS)
    child = await store.fork("s1", child_id="kid")
    await store.close()
    frames = _frames((tmp_path / "kid.jsonl.zst").read_bytes())
    assert len(frames) == 2 and frames[0] == encode_header_line(child.header)
    assert frames[1].startswith(encode_event_lines(EVENTS)), "the parent's lines as they are, then the marker"


async def test_the_header_is_read_from_the_first_frame_alone(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    data = bytearray(path.read_bytes())
    data[_frame_ends(bytes(data))[1] + 8] ^= 0xFF  # damage frame 3 (the second append)
    path.write_bytes(bytes(data))
    store = JsonlEventStore(tmp_path, compression="zstd")
    assert await store.header("s1") == HEADER
    with pytest.raises(CorruptLogError):
        await store.load("s1")
    await store.close()


async def test_a_torn_last_frame_is_dropped_and_cut_by_the_next_append(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    torn = _frame(encode_event_lines(open_turn(18, 4)))[:-9]
    with path.open("ab") as f:
        f.write(torn)
    seen: list[str] = []
    with warnings_to(seen.append):
        store = JsonlEventStore(tmp_path, compression="zstd")
        loaded = await store.load("s1")
        assert loaded.events == EVENTS and loaded.dropped_bytes == len(torn) and loaded.loss is None
        assert (
            "the last zstd frame is incomplete" in loaded.warnings[0]
            and f"{len(torn)} bytes" in loaded.warnings[0]
        )
        seen.clear()
        await store.append("s1", open_turn(18, 4))
        assert seen == [f"{path}: truncated a torn tail of {len(torn)} bytes before appending"]
        await store.close()
    assert len(_frames(path.read_bytes())) == 5 and b"".join(_frames(path.read_bytes())) == encode_log(
        LoadedSession(HEADER, 0, [*EVENTS, *open_turn(18, 4)])
    ), "no byte of the torn frame is left"
    store = JsonlEventStore(tmp_path, compression="zstd")
    again = await store.load("s1")
    assert again.events == [*EVENTS, *open_turn(18, 4)] and again.warnings == ()
    await store.close()


async def test_the_whole_lines_of_a_torn_frame_are_kept_and_written_again(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    big = completed_turns(200, start_seq=18, first_turn=4)  # > 128 KiB: a frame of several blocks
    frame = _frame(encode_event_lines(big))
    torn = frame[:-20]  # its last block cut: the blocks before it still decode
    with path.open("ab") as f:
        f.write(torn)
    store = JsonlEventStore(tmp_path, compression="zstd")
    loaded = await store.load("s1")
    kept = len(loaded.events) - len(EVENTS)
    assert 0 < kept < len(big) and loaded.events == [*EVENTS, *big[:kept]]
    assert loaded.dropped_bytes == len(torn)
    more = [Event("turn/start", len(loaded.events), 9, {"turn": 99})]
    seen: list[str] = []
    with warnings_to(seen.append):
        await store.append("s1", more)
    assert len(seen) == 1 and "bytes of whole lines are written again" in seen[0]
    await store.close()
    frames = _frames(path.read_bytes())
    assert len(frames) == 5, "the kept lines and the new batch are one frame"
    assert frames[-1] == encode_event_lines([*big[:kept], *more])
    store = JsonlEventStore(tmp_path, compression="zstd")
    again = await store.load("s1")
    assert again.events == [*EVENTS, *big[:kept], *more] and again.warnings == () and again.loss is None
    await store.close()


@pytest.mark.parametrize("where", ["middle", "last"])
async def test_a_damaged_complete_frame_is_corruption_naming_the_file(tmp_path: Path, where: str) -> None:
    path = await _three_turns(tmp_path)
    data = bytearray(path.read_bytes())
    ends = _frame_ends(bytes(data))
    start, end = (ends[1], ends[2]) if where == "middle" else (ends[2], ends[3])
    data[(start + end) // 2] ^= 0x55
    path.write_bytes(bytes(data))
    store = JsonlEventStore(tmp_path, compression="zstd")
    with pytest.raises(CorruptLogError, match=r"s1\.jsonl\.zst") as info:
        await store.load("s1")
    assert "\n" not in str(info.value)
    with pytest.raises(CorruptLogError):
        await store.append("s1", open_turn(18, 4))
    await store.close()


async def test_a_bad_record_inside_a_complete_frame_is_corruption_not_a_torn_tail(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    good = path.read_bytes()
    store = JsonlEventStore(tmp_path, compression="zstd")
    for bad, message in (
        (b'{"type":"turn/start","seq":18,"ti', "end inside a line"),  # a whole frame, its line unfinished
        (b"{not json\n", "line 20: not valid JSON"),
    ):
        path.write_bytes(good + _frame(bad))
        with pytest.raises(CorruptLogError, match=message):
            await store.load("s1")
    path.write_bytes(encode_log(LoadedSession(HEADER, 0, EVENTS)))  # plain lines under the .zst name
    with pytest.raises(CorruptLogError, match="not zstd-compressed"):
        await store.load("s1")
    await store.close()


async def test_the_seal_checks_the_plaintext_lines_a_cut_at_a_frame_boundary_is_a_loss(
    tmp_path: Path,
) -> None:
    path = await _three_turns(tmp_path)
    data = path.read_bytes()
    seal = read_seal(path)
    assert seal is not None and (seal.count, seal.end) == (18, len(b"".join(_frames(data)))), "plaintext"
    path.write_bytes(data[: _frame_ends(data)[2]])  # the last append's frame gone: a valid, shorter file
    store = JsonlEventStore(tmp_path, compression="zstd")
    loaded = await store.load("s1")
    assert loaded.events == EVENTS[:12]
    assert loaded.loss is not None and "seqs 12..17 are missing" in loaded.loss and str(path) in loaded.loss
    with pytest.raises(SessionTruncatedError):
        await store.append("s1", EVENTS[12:])
    await store.close()


async def test_a_rewritten_last_frame_is_caught_by_the_seal(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    data = path.read_bytes()
    changed = dataclasses.replace(EVENTS[17], time=EVENTS[17].time + 1)
    rewritten = _frame(encode_event_lines([*EVENTS[12:17], changed]))  # valid frame, checksum and all
    path.write_bytes(data[: _frame_ends(data)[2]] + rewritten)
    store = JsonlEventStore(tmp_path, compression="zstd")
    with pytest.raises(CorruptLogError, match="was rewritten"):
        await store.load("s1")
    await store.close()


@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_a_root_holds_one_encoding(tmp_path: Path, compression: str) -> None:
    other = "zstd" if compression == "none" else "none"
    writer = JsonlEventStore(tmp_path, compression=other)
    await writer.create(HEADER)
    await writer.append("s1", EVENTS)
    await writer.close()
    (foreign,) = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    store = JsonlEventStore(tmp_path, compression=compression)
    for op in (
        store.list_sessions,
        lambda: store.load("s1"),
        lambda: store.create(SessionHeader(id="s2", created_at=2)),
    ):
        with pytest.raises(UnsupportedFormatError, match="encoding mismatch") as info:
            await op()
        assert str(foreign) in str(info.value) and "\n" not in str(info.value)
    await store.close()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [foreign.name]


async def test_every_operation_refuses_a_session_of_the_other_encoding_met_after_opening(
    tmp_path: Path,
) -> None:
    store = JsonlEventStore(tmp_path, compression="zstd")
    await store.create(SessionHeader(id="mine", created_at=0))
    plain = JsonlEventStore(tmp_path / "elsewhere")
    await plain.create(HEADER)
    await plain.close()
    (tmp_path / "elsewhere" / "s1.jsonl").rename(tmp_path / "s1.jsonl")  # appears after the first use
    calls = {
        "load": lambda: store.load("s1"),
        "header": lambda: store.header("s1"),
        "exists": lambda: store.exists("s1"),
        "append": lambda: store.append("s1", EVENTS[:6]),
        "create": lambda: store.create(HEADER),
        "list": store.list_sessions,
    }
    for name, call in calls.items():
        with pytest.raises(UnsupportedFormatError, match=r"encoding mismatch.*jsonl\+zstd"):
            await call()
            pytest.fail(name)
    await store.close()


def test_the_store_url_and_the_constructor_spell_the_mode(tmp_path: Path) -> None:
    store = open_store(f"jsonl+zstd:{tmp_path}/logs")
    assert isinstance(store, JsonlEventStore) and store.root == tmp_path / "logs" and store.encoding.zstd
    plain = open_store(f"jsonl:{tmp_path}/logs")
    assert isinstance(plain, JsonlEventStore) and not plain.encoding.zstd
    with pytest.raises(UsageError, match=r"'jsonl\+zstd:'.*jsonl\+zstd:DIR"):
        open_store("jsonl+zstd:")
    with pytest.raises(UsageError, match="'lz4'"):
        JsonlEventStore(tmp_path, compression="lz4")


APPENDER = """
import asyncio, sys
from dsh.events import Event, SessionHeader
from dsh.store import JsonlEventStore

async def main():
    store = JsonlEventStore(sys.argv[1], compression="zstd")
    await store.create(SessionHeader(id="s1", created_at=1))
    seq = 0
    while True:
        pad = "x" * (seq % 300)
        batch = [Event("turn/start", seq + i, seq, {"turn": seq + i, "pad": pad}) for i in range(3)]
        await store.append("s1", batch)  # durable: returns after fsync
        seq += 3
        print(seq, flush=True)

asyncio.run(main())
"""


async def test_a_killed_writer_loses_nothing_it_appended_durably(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    acknowledged = 0
    try:
        while acknowledged < 600:
            acknowledged = int(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.communicate(timeout=30)
    store = JsonlEventStore(tmp_path, compression="zstd")
    loaded = await store.load("s1")
    assert len(loaded.events) >= acknowledged and loaded.loss is None
    assert [e.seq for e in loaded.events] == list(range(len(loaded.events)))
    nxt = len(loaded.events)
    await store.append("s1", [Event("turn/start", nxt, 0, {"turn": nxt})])
    await store.close()
    size = os.path.getsize(tmp_path / "s1.jsonl.zst")
    assert _frame_ends((tmp_path / "s1.jsonl.zst").read_bytes())[-1] == size, "whole frames only"

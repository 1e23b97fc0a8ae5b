"""What a JSONL listing keeps for the next one (``dsh.store.jsonl_kept``): summaries and digests
used only while each file is unchanged, a kept file that is not ours ignored, deleted sessions
forgotten."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from dsh.events import SessionHeader
from dsh.store import JsonlEventStore, LoadedSession
from dsh.store.jsonl_kept import KEPT_NAME
from dsh.store.notices import warnings_to
from dsh.store.samples import completed_turns

COMPRESSIONS = ["none", "zstd"]


async def _sessions(root: Path, compression: str = "none", count: int = 5) -> list[str]:
    store = JsonlEventStore(root, compression=compression)
    ids = [f"s{i}" for i in range(count)]
    await store.create_batch(
        [LoadedSession(SessionHeader(id=sid, created_at=1_000 + i, cwd="/w"), 0, completed_turns(i + 1))
         for i, sid in enumerate(ids)]
    )  # fmt: skip
    await store.close()
    return ids


async def _listed(root: Path, compression: str = "none") -> list[tuple[str, int, int, int | None]]:
    store = JsonlEventStore(root, compression=compression)
    try:
        return [
            (s.header.id, s.inherited_event_count, s.event_count, s.last_time)
            for s in await store.list_sessions()
        ]
    finally:
        await store.close()


@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_a_second_listing_reads_no_log_whole(
    tmp_path: Path, compression: str, jsonl_decodes: list[str]
) -> None:
    await _sessions(tmp_path, compression)
    jsonl_decodes.clear()
    first = await _listed(tmp_path, compression)
    assert len(jsonl_decodes) == 5 and (tmp_path / KEPT_NAME).is_file()
    jsonl_decodes.clear()
    assert await _listed(tmp_path, compression) == first, "a fresh store lists the same"
    assert jsonl_decodes == [], f"every file unchanged: nothing decoded whole ({jsonl_decodes})"


async def test_a_file_appended_to_since_is_read_again(tmp_path: Path, jsonl_decodes: list[str]) -> None:
    await _sessions(tmp_path)
    before = {sid: count for sid, _, count, _ in await _listed(tmp_path)}
    store = JsonlEventStore(tmp_path)
    await store.append("s2", completed_turns(1, start_seq=before["s2"], first_turn=9), durable=True)
    await store.close()
    jsonl_decodes.clear()
    after = {sid: count for sid, _, count, _ in await _listed(tmp_path)}
    assert jsonl_decodes == ["s2.jsonl"], jsonl_decodes
    assert after == {**before, "s2": before["s2"] + len(completed_turns(1))}


async def test_digests_are_kept_for_unchanged_files_only(tmp_path: Path) -> None:
    await _sessions(tmp_path)
    counts = {sid: count for sid, _, count, _ in await _listed(tmp_path)}
    store = JsonlEventStore(tmp_path)
    await store.list_sessions()
    await store.keep_digests([("s0", counts["s0"], b'{"d":0}'), ("s1", counts["s1"] + 1, b'{"d":1}')])
    await store.close()
    store = JsonlEventStore(tmp_path)
    assert await store.kept_digests() == {"s0": (counts["s0"], b'{"d":0}')}, "s1's count did not match"
    assert await store.kept_digests(["s0", "s1", "nope"]) == {"s0": (counts["s0"], b'{"d":0}')}
    await store.append("s0", completed_turns(1, start_seq=counts["s0"], first_turn=9), durable=True)
    assert await store.kept_digests(["s0"]) == {}, "s0 changed: its digest is not served"
    await store.close()


@pytest.mark.parametrize(
    "kept",
    [
        b"not json",
        b'{"version": 99, "files": {}}',
        b'{"version": 1, "files": []}',
        b'{"version": 1, "files": {"s0.jsonl": {"key": "x"}}}',
    ],
)
async def test_a_kept_file_that_is_not_ours_is_ignored(tmp_path: Path, kept: bytes) -> None:
    await _sessions(tmp_path)
    expected = await _listed(tmp_path)
    (tmp_path / KEPT_NAME).write_bytes(kept)
    assert await _listed(tmp_path) == expected
    assert orjson.loads((tmp_path / KEPT_NAME).read_bytes())["version"] == 1, "written again"


async def test_a_kept_header_that_is_not_the_files_is_not_used(tmp_path: Path) -> None:
    await _sessions(tmp_path, count=2)
    expected = await _listed(tmp_path)
    path = tmp_path / KEPT_NAME
    raw = orjson.loads(path.read_bytes())
    raw["files"]["s0.jsonl"]["header"] = raw["files"]["s1.jsonl"]["header"]  # names s1, in s0's file
    raw["files"]["s0.jsonl"]["count"] = 999
    path.write_bytes(orjson.dumps(raw))
    warned: list[str] = []
    with warnings_to(warned.append):
        assert await _listed(tmp_path) == expected
    assert warned == []


async def test_deleted_sessions_are_forgotten(tmp_path: Path) -> None:
    ids = await _sessions(tmp_path, count=3)
    await _listed(tmp_path)
    store = JsonlEventStore(tmp_path)
    await store.delete("s0")
    assert set(orjson.loads((tmp_path / KEPT_NAME).read_bytes())["files"]) == {"s1.jsonl", "s2.jsonl"}
    for sid in ids[1:]:
        await store.delete(sid)
    await store.close()
    assert not (tmp_path / KEPT_NAME).exists(), "no session left: nothing kept"


async def test_a_header_naming_a_session_no_file_can_hold_is_skipped(tmp_path: Path) -> None:
    await _sessions(tmp_path, count=3)
    path = tmp_path / "s1.jsonl"
    first, rest = path.read_bytes().split(b"\n", 1)
    header = orjson.loads(first)
    header["id"] = "x" * 300  # longer than any file name: no file is named for it
    path.write_bytes(orjson.dumps(header) + b"\n" + rest)
    warned: list[str] = []
    with warnings_to(warned.append):
        assert [sid for sid, *_ in await _listed(tmp_path)] == ["s0", "s2"]
    assert len(warned) == 1 and "s1.jsonl" in warned[0] and "not this file's" in warned[0], warned

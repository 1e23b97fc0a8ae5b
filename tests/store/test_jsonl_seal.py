"""#36 item 9: a JSONL session file cut at a line boundary is seen (its seal), not loaded as shorter.

Real files in a temp directory, through the public ``JsonlEventStore`` API: durable appends
seal the file; a cut back to fewer lines is one warning naming the file and the missing
seqs on every read and refuses every append; a complete but corrupt last line is
corruption; a genuinely torn partial line stays a torn tail; a file of an older dsh (no
seal) loads unchecked and is sealed by its first append; the session files stay
byte-for-byte what they were.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.errors import CorruptLogError, SessionTruncatedError
from dsh.events import SessionHeader
from dsh.store import JsonlEventStore, LoadedSession, encode_log
from dsh.store.notices import warnings_to
from dsh.store.samples import completed_turns, open_turn
from dsh.store.seal import read_seal, seal_path

HEADER = SessionHeader(id="s1", created_at=1, cwd="/w")
EVENTS = completed_turns(3)  # 18 events, turns of 6


async def _three_turns(root: Path) -> Path:
    store = JsonlEventStore(root)
    await store.create(HEADER)
    for first in (0, 6, 12):
        await store.append("s1", EVENTS[first : first + 6])
    await store.close()
    return root / "s1.jsonl"


def _cut_to_lines(path: Path, keep: int) -> None:
    """Keep the first ``keep`` lines (the header is line 1): a cut at a line boundary."""
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:keep]))


async def test_durable_appends_seal_the_file_and_the_log_format_is_unchanged(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    assert path.read_bytes() == encode_log(LoadedSession(HEADER, 0, EVENTS)), "the session file is as before"
    seal = read_seal(path)
    assert seal is not None and (seal.count, seal.end) == (18, path.stat().st_size)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".s1.jsonl.seal", "s1.jsonl"]
    store = JsonlEventStore(tmp_path)
    assert [s.header.id for s in await store.list_sessions()] == ["s1"], "the seal is never a session"
    loaded = await store.load("s1")
    assert loaded.events == EVENTS and loaded.loss is None and loaded.warnings == ()
    await store.close()


@pytest.mark.parametrize("keep", [1, 8, 13, 18])
async def test_a_cut_at_a_line_boundary_is_named_on_every_read_and_refuses_appends(
    tmp_path: Path, keep: int
) -> None:
    path = await _three_turns(tmp_path)
    _cut_to_lines(path, keep)
    held = keep - 1  # events left
    missing = "seq 17 is missing" if held == 17 else f"seqs {held}..17 are missing"
    cut = path.read_bytes()
    seen: list[str] = []
    store = JsonlEventStore(tmp_path)
    with warnings_to(seen.append):
        loaded = await store.load("s1")
        assert loaded.events == EVENTS[:held]
        assert loaded.loss is not None and str(path) in loaded.loss and missing in loaded.loss
        assert await store.read_from("s1", 0) == EVENTS[:held]
        assert [s.event_count for s in await store.list_sessions()] == [held]
        with pytest.raises(
            SessionTruncatedError, match=rf"refusing to append to session s1: {path}: {missing}"
        ):
            await store.append("s1", open_turn(held, 9))
    assert seen and all(str(path) in line and missing in line for line in seen), seen
    assert path.read_bytes() == cut, "nothing is appended after a detected loss"
    await store.close()


async def test_a_cut_under_an_open_writer_refuses_its_next_append(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    store = JsonlEventStore(tmp_path)
    await store.append("s1", open_turn(18, 4))
    _cut_to_lines(path, 15)
    with pytest.raises(SessionTruncatedError, match=r"seqs 14\.\.20 are missing"):
        await store.append("s1", completed_turns(1, start_seq=21, first_turn=5))
    await store.close()


async def test_a_single_missing_seq_is_named(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    _cut_to_lines(path, 18)
    store = JsonlEventStore(tmp_path)
    assert "seq 17 is missing" in str((await store.load("s1")).loss)
    await store.close()


@pytest.mark.parametrize("last", [b'{"type":"turn/st\n', b"garbage\n", b'{"type":"turn/start","seq":18}\n'])
async def test_a_complete_but_corrupt_last_line_is_corruption_not_a_torn_write(
    tmp_path: Path, last: bytes
) -> None:
    path = await _three_turns(tmp_path)
    with path.open("ab") as f:
        f.write(last)
    store = JsonlEventStore(tmp_path)
    with pytest.raises(CorruptLogError, match=rf"^{path}, line 20: "):
        await store.load("s1")
    with pytest.raises(CorruptLogError, match="line 20"):
        await store.append("s1", open_turn(18, 4))
    await store.close()


async def test_a_torn_partial_last_line_is_still_a_torn_write(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    with path.open("ab") as f:
        f.write(b'{"type":"turn/start","seq":18,"ti')
    store = JsonlEventStore(tmp_path)
    loaded = await store.load("s1")
    assert loaded.events == EVENTS and loaded.loss is None and loaded.dropped_bytes == 33
    await store.append("s1", open_turn(18, 4))  # truncates the torn tail, then appends
    assert (await store.load("s1")).events == [*EVENTS, *open_turn(18, 4)]
    await store.close()


async def test_a_rewritten_last_sealed_line_is_corruption(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"completed"}}}\n', b'"cancelled"}}}\n'))
    store = JsonlEventStore(tmp_path)
    with pytest.raises(CorruptLogError, match=rf"{path}, line 19: the last line dsh appended durably"):
        await store.load("s1")
    await store.close()


async def test_a_file_without_a_seal_loads_unchecked_and_its_first_append_seals_it(tmp_path: Path) -> None:
    """Stores written by an older dsh: no seal, no check, until dsh next appends."""
    path = await _three_turns(tmp_path)
    seal_path(path).unlink()
    _cut_to_lines(path, 13)
    store = JsonlEventStore(tmp_path)
    loaded = await store.load("s1")
    assert loaded.events == EVENTS[:12] and loaded.loss is None and loaded.warnings == ()
    await store.append("s1", EVENTS[12:])
    await store.close()
    _cut_to_lines(path, 13)
    store = JsonlEventStore(tmp_path)
    assert "seqs 12..17 are missing" in str((await store.load("s1")).loss)
    await store.close()


async def test_create_fork_import_and_delete_keep_the_seal_in_step(tmp_path: Path) -> None:
    path = await _three_turns(tmp_path)
    store = JsonlEventStore(tmp_path)
    child = await store.fork("s1", child_id="kid")
    kid = tmp_path / "kid.jsonl"
    assert read_seal(kid) is not None and read_seal(kid).count == len(child.events)  # type: ignore[union-attr]
    await store.append("kid", open_turn(19, 4))  # 3 events after the prefix and its marker
    _cut_to_lines(kid, 21)
    assert "kid.jsonl: seqs 20..21 are missing" in str((await store.load("kid")).loss)
    await store.delete("s1")
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "the seals go with their sessions"
    await store.create_batch([LoadedSession(HEADER, 0, EVENTS[:6])])  # an import, same id again
    assert (await store.load("s1")).loss is None, "a new session's seal replaces any stale one"
    assert read_seal(path).count == 6  # type: ignore[union-attr]
    await store.close()

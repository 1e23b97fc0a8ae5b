"""``JsonlEventStore`` specifics: file layout, version refusal, torn tails and crash recovery."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson
import pytest

from dsh.errors import (
    CorruptLogError,
    InvalidSessionIdError,
    SessionExistsError,
    SessionNotFoundError,
    UnsupportedFormatError,
)
from dsh.events import Event, SessionHeader
from dsh.store import JsonlEventStore, LoadedSession, decode_log, encode_log
from dsh.store.codec import encode_event_lines
from dsh.store.jsonl import session_file_name
from dsh.store.jsonl_kept import KEPT_NAME
from dsh.store.notices import warnings_to
from dsh.store.samples import completed_turns, open_turn

HEADER = SessionHeader(id="s1", created_at=7, cwd="/w")


async def _store_with(tmp_path: Path, events: list[Event]) -> tuple[JsonlEventStore, Path]:
    store = JsonlEventStore(tmp_path)
    await store.create(HEADER)
    await store.append("s1", events)
    return store, tmp_path / "s1.jsonl"


async def test_one_file_per_session_with_header_then_events(tmp_path: Path) -> None:
    events = completed_turns(1)
    store, path = await _store_with(tmp_path, events)
    assert _names(tmp_path) == ["s1.jsonl"], "no temp files are left"
    assert (tmp_path / ".s1.jsonl.seal").is_file(), "beside it, its seal (dsh.store.seal)"
    assert path.read_bytes() == encode_log(LoadedSession(HEADER, 0, events))
    assert store.path_for("s1") == path
    await store.close()


@pytest.mark.parametrize("sid", ["a/b", "../up", "a\\b", "a\x00b", "..", "x" * 201])
async def test_a_malformed_id_is_refused_before_any_file_is_named(tmp_path: Path, sid: str) -> None:
    assert "/" not in session_file_name(sid[:200]), "the mapping itself is safe for any id"
    store = JsonlEventStore(tmp_path)
    with pytest.raises(InvalidSessionIdError, match="invalid session id"):
        await store.create(SessionHeader(id=sid, created_at=1))
    with pytest.raises(SessionNotFoundError):
        await store.load(sid)
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []
    await store.close()


@pytest.mark.parametrize("sid", ["{{sessionId}}", ".hidden", "~7E", "naïve", "x" * 200])
async def test_any_id_maps_to_one_safe_file(tmp_path: Path, sid: str) -> None:
    name = session_file_name(sid)
    assert "/" not in name and not name.startswith(".") and name.endswith(".jsonl")
    store = JsonlEventStore(tmp_path)
    await store.create(SessionHeader(id=sid, created_at=1))
    await store.append(sid, completed_turns(1))
    assert (await store.load(sid)).header.id == sid
    assert [s.header.id for s in await store.list_sessions()] == [sid]
    assert _names(tmp_path) == [name]
    await store.close()


def test_file_names_are_injective() -> None:
    ids = ["a~2Fb", "a/b", "~", "~7E", ".x", "~2Ex", "x"]
    assert len({session_file_name(i) for i in ids}) == len(ids)


async def test_future_version_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s9.jsonl").write_bytes(orjson.dumps({"type": "session", "version": 3, "id": "s9"}) + b"\n")
    store = JsonlEventStore(tmp_path)
    with pytest.raises(
        UnsupportedFormatError, match=r"s9\.jsonl: log format version 3 is newer .*upgrade dsh"
    ):
        await store.load("s9")
    with pytest.raises(UnsupportedFormatError, match="upgrade dsh"):
        await store.append("s9", completed_turns(1))
    seen, sink = _collecting()
    with sink:
        assert await store.list_sessions() == [], "a listing skips it (with the warning)"
    assert len(seen) == 1 and "upgrade dsh" in seen[0]
    await store.close()


async def test_version_0_files_must_be_imported(tmp_path: Path) -> None:
    (tmp_path / "old.jsonl").write_bytes(b'{"type":"session","version":0,"id":"old","createdAt":0}\n')
    store = JsonlEventStore(tmp_path)
    with pytest.raises(UnsupportedFormatError, match="import it"):
        await store.load("old")
    await store.close()


async def test_a_file_naming_another_session_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(encode_log(LoadedSession(SessionHeader(id="b", created_at=0), 0, [])))
    store = JsonlEventStore(tmp_path)
    with pytest.raises(CorruptLogError, match=r"a\.jsonl: its header names session 'b'"):
        await store.load("a")
    await store.close()


async def test_torn_tail_is_dropped_without_rewriting_then_truncated_by_the_next_append(
    tmp_path: Path,
) -> None:
    events = completed_turns(2)
    store, path = await _store_with(tmp_path, events)
    await store.close()
    with path.open("ab") as f:
        f.write(b'{"type":"turn/start","seq":12,"ti')
    torn = path.read_bytes()
    store = JsonlEventStore(tmp_path)
    loaded = await store.load("s1")
    assert loaded.events == events
    assert len(loaded.warnings) == 1 and str(path) in loaded.warnings[0]
    assert path.read_bytes() == torn, "loading never rewrites the file"
    more = completed_turns(1, start_seq=12, first_turn=3)
    await store.append("s1", more)
    clean = decode_log(path.read_bytes(), str(path))
    assert clean.warnings == () and clean.events == [*events, *more]
    await store.close()


async def test_corruption_before_the_last_turn_end_is_fatal(tmp_path: Path) -> None:
    store, path = await _store_with(tmp_path, completed_turns(2))
    await store.close()
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3][:20]
    path.write_bytes(b"\n".join(lines))
    store = JsonlEventStore(tmp_path)
    with pytest.raises(CorruptLogError, match=rf"^{path}, line 4: not valid JSON$"):
        await store.load("s1")
    with pytest.raises(CorruptLogError, match="line 4"):
        await store.append("s1", open_turn(12, 3))
    await store.close()


async def test_a_partial_write_while_open_is_truncated_before_the_next_append(tmp_path: Path) -> None:
    events = completed_turns(1)
    store, path = await _store_with(tmp_path, events)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'{"type":"turn/start","seq":6,"time":0,"da')  # a crashed writer's half line
    os.close(fd)
    more = completed_turns(1, start_seq=6, first_turn=2)
    await store.append("s1", more)
    await store.close()
    decoded = decode_log(path.read_bytes(), str(path))
    assert decoded.warnings == () and decoded.events == [*events, *more]


async def test_buffered_events_reach_the_file_at_the_next_durable_append(tmp_path: Path) -> None:
    events = completed_turns(1)
    store, path = await _store_with(tmp_path, [])
    size = path.stat().st_size
    await store.append("s1", events[:3], durable=False)
    assert path.stat().st_size == size, "non-durable appends are buffered"
    await store.append("s1", events[3:])
    assert decode_log(path.read_bytes(), str(path)).events == events
    await store.close()


async def test_create_never_overwrites_an_existing_file(tmp_path: Path) -> None:
    store, path = await _store_with(tmp_path, completed_turns(1))
    before = path.read_bytes()
    other = JsonlEventStore(tmp_path)
    with pytest.raises(SessionExistsError, match="'s1' already exists"):
        await other.create(HEADER)
    assert path.read_bytes() == before
    assert _names(tmp_path) == ["s1.jsonl"]
    await store.close()
    await other.close()


async def test_fork_copies_the_parents_lines_verbatim(tmp_path: Path) -> None:
    done = completed_turns(2)
    store, path = await _store_with(tmp_path, [*done, *open_turn(12, 3)])
    child = await store.fork("s1", child_id="kid", created_at=99)
    parent_lines = path.read_bytes().split(b"\n")
    child_lines = (tmp_path / "kid.jsonl").read_bytes().split(b"\n")
    assert child_lines[1:13] == parent_lines[1:13]
    assert child_lines[13] == b'{"type":"session/end-seed","seq":12,"time":99,"data":{"inherited":true}}'
    assert child.inherited_event_count == 12
    await store.close()


async def test_listing_skips_temp_and_foreign_files(tmp_path: Path) -> None:
    store, _ = await _store_with(tmp_path, [])
    (tmp_path / ".s2.jsonl.abc.tmp").write_bytes(b"half")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "dir.jsonl").mkdir()
    assert [s.header.id for s in await store.list_sessions()] == ["s1"]
    await store.close()


async def test_listing_a_missing_root_is_empty(tmp_path: Path) -> None:
    store = JsonlEventStore(tmp_path / "absent")
    assert await store.list_sessions() == []
    assert not await store.exists("x")
    await store.close()


BATCH_KILLED = """
import asyncio, sys, time
from dsh.events import SessionHeader
from dsh.store import JsonlEventStore, LoadedSession, staging

placed = 0
place = staging._place

def place_then_hang(*args):
    global placed
    place(*args)
    placed += 1
    if placed == 2:
        print("placed", flush=True)
        time.sleep(3600)

staging._place = place_then_hang
batch = [LoadedSession(SessionHeader(id=f"b{i}", created_at=i), 0, []) for i in range(3)]
asyncio.run(JsonlEventStore(sys.argv[1]).create_batch(batch))
"""


def _age(path: Path, seconds: float = 60.0) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


async def test_a_batch_killed_before_its_commit_is_rolled_back_by_the_next_open(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", BATCH_KILLED, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "placed"
    assert (tmp_path / "b0.jsonl").exists() and (tmp_path / "b1.jsonl").exists()
    proc.kill()
    proc.communicate()
    (stage,) = [p for p in tmp_path.iterdir() if p.name.startswith(".import-")]
    store = JsonlEventStore(tmp_path)
    assert await store.list_sessions() != [], "a staging directory this young may still be in use"
    await store.close()
    _age(stage)
    store = JsonlEventStore(tmp_path)
    seen, sink = _collecting()
    with sink:
        assert await store.list_sessions() == [], "nothing of the killed batch remains"
    assert len(seen) == 1 and "rolled back an interrupted import (2 session" in seen[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    await store.close()


async def test_temp_files_of_dead_writers_are_removed_on_the_next_open(tmp_path: Path) -> None:
    store, _ = await _store_with(tmp_path, completed_turns(1))
    await store.close()
    dead = tmp_path / ".s2.jsonl.k1l2m3.tmp"
    dead.write_bytes(b'{"type":"session"')
    _age(dead)
    young = tmp_path / ".s3.jsonl.a1b2c3.tmp"
    young.write_bytes(b"being written")
    held = tmp_path / ".s4.jsonl.x9y8z7.tmp"
    held.write_bytes(b"a slow writer")
    _age(held)
    fd = os.open(held, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # its writer is alive
    empty_stage = tmp_path / ".import-zzz.tmp"
    empty_stage.mkdir()
    _age(empty_stage)
    try:
        store = JsonlEventStore(tmp_path)
        seen, sink = _collecting()
        with sink:
            assert [s.header.id for s in await store.list_sessions()] == ["s1"]
        assert _names(tmp_path) == [".s3.jsonl.a1b2c3.tmp", ".s4.jsonl.x9y8z7.tmp", "s1.jsonl"]
        assert seen == []
        await store.close()
    finally:
        os.close(fd)


def _names(root: Path) -> list[str]:
    """The files in ``root`` but the sessions' seals (``dsh.store.seal``; tests/store/test_jsonl_seal.py)
    and what listings kept (``dsh.store.jsonl_kept``; tests/store/test_jsonl_kept.py)."""
    return sorted(p.name for p in root.iterdir() if not p.name.endswith(".seal") and p.name != KEPT_NAME)


def _collecting() -> tuple[list[str], contextlib.AbstractContextManager[None]]:
    seen: list[str] = []
    return seen, warnings_to(seen.append)


async def test_every_read_of_a_torn_tail_reports_it_with_the_dropped_bytes(tmp_path: Path) -> None:
    events = completed_turns(1)
    store, path = await _store_with(tmp_path, events)
    await store.close()
    torn = b'{"type":"turn/start","seq":6,"ti'
    with path.open("ab") as f:
        f.write(torn)
    seen, sink = _collecting()
    with sink:
        store = JsonlEventStore(tmp_path)
        loaded = await store.load("s1")
        assert loaded.dropped_bytes == len(torn) and loaded.warnings
        assert f"{len(torn)} bytes" in loaded.warnings[0]
        reads: dict[str, Callable[[], Awaitable[object]]] = {
            "read_from": lambda: store.read_from("s1", 0),
            "list_sessions": store.list_sessions,
            "fork": lambda: store.fork("s1"),
        }
        for name, read in reads.items():
            seen.clear()
            await read()
            assert seen == list(loaded.warnings), f"{name} reports the torn tail"
        seen.clear()
        await store.append("s1", open_turn(6, 2))
        assert seen == [f"{path}: truncated a torn tail of {len(torn)} bytes before appending"]
        await store.close()


async def test_foreign_files_are_skipped_with_a_warning(tmp_path: Path) -> None:
    store, _ = await _store_with(tmp_path, completed_turns(1))
    (tmp_path / "notes.jsonl").write_text("just some notes\n")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "list.jsonl").write_text("[1, 2]\n")
    (tmp_path / "other.jsonl").write_bytes(
        encode_log(LoadedSession(SessionHeader(id="b", created_at=0), 0, []))
    )
    (tmp_path / "old.jsonl").write_bytes(b'{"type":"session","version":0,"id":"old","createdAt":0}\n')
    (tmp_path / "new.jsonl").write_bytes(b'{"type":"session","version":3,"id":"new"}\n')
    seen, sink = _collecting()
    with sink:
        assert [s.header.id for s in await store.list_sessions()] == ["s1"]
        assert await store.children("s1") == []
        assert (await store.load("s1")).events == completed_turns(1)
    names = ["notes", "empty", "list", "other", "old", "new"]
    for name in names:
        assert any(f"{name}.jsonl" in w and "skipped" in w for w in seen), (name, seen)
    assert any("upgrade dsh" in w for w in seen) and any("import it" in w for w in seen)
    await store.close()


async def test_a_reader_waits_for_a_write_in_progress_instead_of_warning(tmp_path: Path) -> None:
    events = completed_turns(1)
    store, path = await _store_with(tmp_path, events)
    more = completed_turns(1, start_seq=6, first_turn=2)
    line = encode_event_lines(more)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another process's write is under way ...
    os.write(fd, line[:25])
    reader = JsonlEventStore(tmp_path)
    seen, sink = _collecting()
    with sink:
        task = asyncio.ensure_future(reader.load("s1"))
        await asyncio.sleep(0.2)
        assert not task.done(), "the reader waits for the write in progress"
        os.write(fd, line[25:])  # ... and completes
        fcntl.flock(fd, fcntl.LOCK_UN)
        loaded = await task
    os.close(fd)
    assert loaded.events == [*events, *more] and loaded.warnings == () and seen == []
    await reader.close()
    await store.close()


async def test_show_and_tree_read_only_the_sessions_they_need(tmp_path: Path) -> None:
    store, _ = await _store_with(tmp_path, completed_turns(1))
    await store.fork("s1", child_id="kid")
    await store.create(SessionHeader(id="big", created_at=9))
    await store.append("big", completed_turns(3))
    await store.close()
    big = tmp_path / "big.jsonl"
    lines = big.read_bytes().split(b"\n")
    lines[4] = b"{corrupt"  # a body no command about s1 should ever read
    big.write_bytes(b"\n".join(lines))
    store = JsonlEventStore(tmp_path)
    seen, sink = _collecting()
    with sink:
        assert [k.header.id for k in await store.children("s1")] == ["kid"]
    assert seen == [], "children() reads only the headers of unrelated sessions"
    await store.close()


DELETE_KILLED = """
import asyncio, os, sys, time
from dsh.events import SessionHeader
from dsh.store import JsonlEventStore

unlink = os.unlink

def unlink_then_hang(path, *args, **kwargs):
    unlink(path, *args, **kwargs)
    if str(path).endswith(".jsonl"):
        print("unlinked", flush=True)
        time.sleep(3600)

async def main():
    store = JsonlEventStore(sys.argv[1])
    await store.create(SessionHeader(id="root", created_at=1))
    for i in range(3):
        await store.create(SessionHeader(id=f"kid{i}", created_at=2 + i, parent_session="root"))
    await store.create(SessionHeader(id="other", created_at=9))
    os.unlink = unlink_then_hang
    await store.delete("root")

asyncio.run(main())
"""


async def test_a_delete_killed_midway_is_finished_by_the_next_open(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", DELETE_KILLED, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "unlinked"
    proc.kill()  # SIGKILL after the first of four session files is gone
    proc.communicate()
    left = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    assert len(left) == 4 and "other.jsonl" in left, left
    store = JsonlEventStore(tmp_path)
    seen, sink = _collecting()
    with sink:
        assert [s.header.id for s in await store.list_sessions()] == ["other"]
    assert len(seen) == 1 and "finished an interrupted delete (3 session file(s) removed)" in seen[0]
    # the journal is gone; the dead process's lease files stay (unlocked: see dsh.store.lease)
    assert [n for n in _names(tmp_path) if not n.endswith(".lock")] == ["other.jsonl"]
    await store.close()

"""A listing derives a long session's digest from a surface read (``DeriveCache``): no stream
decoded, and the same digest as from every event — checked on the original's recordings and
on sessions of every shape dsh writes, in each file store."""

from __future__ import annotations

from pathlib import Path

import pytest

import dsh.store.rows as rows
from dsh.events import Event, SessionHeader
from dsh.events.deferred import join_tail
from dsh.session.digest import derive
from dsh.store import EventStore, JsonlEventStore, SqliteEventStore
from dsh.store.samples import completed_turn, open_turn
from dsh.store.transfer import import_log
from dsh.ui.rows import SURFACE_FROM, DeriveCache

NOW = 1_700_000_000_000


def _open(kind: str, root: Path) -> EventStore:
    return SqliteEventStore(root / "s.db") if kind == "sqlite" else JsonlEventStore(root / "sessions")


async def _same_digest_both_ways(store: EventStore) -> int:
    """Every session's digest from a whole read and from a surface read, compared; how many."""
    checked = 0
    for summary in await store.list_sessions():
        sid, cut = summary.header.id, summary.inherited_event_count
        whole = derive(summary.header, await store.read_from(sid, 0), cut, now_ms=NOW)
        surface = derive(summary.header, (await store.load(sid, streams=False)).events, cut, now_ms=NOW)
        assert (surface, surface.bill) == (whole, whole.bill), sid
        checked += 1
    return checked


async def test_a_long_session_is_derived_without_decoding_its_streams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    events: list[Event] = []
    turn = 0
    while len(events) <= SURFACE_FROM:
        turn += 1
        events += completed_turn(len(events), turn, reply="a streamed reply of some length " * 20)
    await store.create(SessionHeader(id="long", created_at=NOW), events)
    joined: list[bytes] = []

    def counted(head: bytes | str, tail: bytes) -> bytes:
        joined.append(tail)
        return join_tail(head, tail)

    monkeypatch.setattr(rows, "join_tail", counted)
    (summary,) = await store.list_sessions()
    derived = await DeriveCache(store).get(summary)
    assert joined == [], f"{len(joined)} streams decoded to derive a digest"
    assert derived == derive(summary.header, await store.read_from("long", 0), 0)
    assert len(joined) == turn, "a whole read decodes each settlement's stream (the check can fail)"
    await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
async def test_the_originals_recordings_derive_the_same_from_their_surface(
    upstream: Path, tmp_path: Path, kind: str
) -> None:
    checked = 0
    for n, recording in enumerate(sorted(p for p in upstream.iterdir() if p.is_dir())):
        store = _open(kind, tmp_path / f"r{n}")
        for log in sorted(recording.glob("session*.jsonl")):
            await import_log(store, log)
        checked += await _same_digest_both_ways(store)
        await store.close()
    assert checked >= 32, checked


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
async def test_dsh_shaped_sessions_derive_the_same_from_their_surface(tmp_path: Path, kind: str) -> None:
    store = _open(kind, tmp_path)
    done = completed_turn(0, 1, reply="x" * 2_000)
    await store.create(SessionHeader(id="done", created_at=NOW), done)
    await store.create(SessionHeader(id="open", created_at=NOW), [*done, *open_turn(len(done), 2)])
    await store.create(SessionHeader(id="empty", created_at=NOW))
    await store.fork("done", child_id="forked")
    assert await _same_digest_both_ways(store) == 4
    await store.close()

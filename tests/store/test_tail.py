"""``dsh.store.tail.follow``: the backlog, then live events, until a turn ends — polled and listened."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import pytest

from dsh.errors import SessionNotFoundError
from dsh.events import Event, SessionHeader
from dsh.store import EventStore, MemoryEventStore
from dsh.store import tail as tail_module
from dsh.store.contract import StoreOpener
from dsh.store.postgres import PostgresEventStore
from dsh.store.postgres_testing import (
    drop_schema,
    new_schema_name,
    server_url,
    unreachable_reason,
    with_schema,
)
from dsh.store.samples import completed_turn, completed_turns, open_turn
from dsh.store.tail import ListeningStore, TurnTracker, follow
from tests.patience import patience

HEADER = SessionHeader(id="s", created_at=1, cwd="/w")
POLL = 0.01


async def _until(condition: Callable[[], bool], what: str, limit: float = 20.0) -> None:
    """Poll ``condition``; a hang guard of ``patience(limit)`` s."""
    deadline = time.monotonic() + patience(limit)
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


async def _follow_a_turn(writer: EventStore, reader: EventStore, *, from_seq: int = 0) -> list[Event]:
    """Follow ``s`` on ``reader`` while ``writer`` appends turn 2 in two batches; return what came."""
    stored = len(await writer.read_from("s", 0))
    got: list[Event] = []

    async def consume() -> None:
        async for event in follow(reader, "s", from_seq, poll_interval=POLL):
            got.append(event)

    turn = completed_turn(stored, 2)
    async with asyncio.timeout(patience(60)), asyncio.TaskGroup() as tg:
        task = tg.create_task(consume())
        await _until(lambda: len(got) == stored - from_seq, "the backlog")
        await writer.append("s", turn[:3])
        await _until(lambda: len(got) == stored - from_seq + 3, "the first live batch")
        assert not task.done(), "a turn still open: following goes on"
        await writer.append("s", turn[3:])
    return got


async def test_follow_prints_the_backlog_then_live_events_until_the_turn_ends(opener: StoreOpener) -> None:
    writer, reader = await opener(), await opener()
    await writer.create(HEADER)
    await writer.append("s", completed_turns(1))
    got = await _follow_a_turn(writer, reader)
    assert got == (await writer.load("s")).events, (
        "everything, in order, once; the backlog's turn/end did not stop it"
    )
    assert got[-1].type == "turn/end"
    await writer.close()
    await reader.close()


async def test_follow_from_a_seq_inside_a_running_turn(opener: StoreOpener) -> None:
    writer, reader = await opener(), await opener()
    await writer.create(HEADER)
    await writer.append("s", completed_turns(1))
    got = await _follow_a_turn(writer, reader, from_seq=4)
    assert got == (await writer.read_from("s", 4))
    await writer.close()
    await reader.close()


async def test_a_running_turn_in_the_backlog_ends_following_at_its_end() -> None:
    store = MemoryEventStore()
    await store.create(HEADER)
    await store.append("s", [*completed_turns(1), *open_turn(6, 2)])
    got: list[Event] = []

    async def consume() -> None:
        async for event in follow(store, "s", poll_interval=POLL):
            got.append(event)

    async with asyncio.timeout(patience(60)), asyncio.TaskGroup() as tg:
        tg.create_task(consume())
        await _until(lambda: len(got) == 9, "the backlog")
        await store.append("s", [Event("turn/end", 9, 2, {"turn": 2, "reason": {"kind": "interrupted"}})])
    assert [e.seq for e in got] == list(range(10))


async def test_without_until_turn_end_following_runs_until_stopped() -> None:
    store = MemoryEventStore()
    await store.create(HEADER)
    events = completed_turns(3)
    got: list[Event] = []
    stream = follow(store, "s", poll_interval=POLL, until_turn_end=False)
    async with asyncio.timeout(patience(60)):
        for i in range(0, len(events), 6):
            await store.append("s", events[i : i + 6])
            for _ in range(6):
                got.append(await anext(stream))
    await stream.aclose()
    assert got == events


async def test_following_a_missing_session_raises(opener: StoreOpener) -> None:
    store = await opener()
    with pytest.raises(SessionNotFoundError):
        await anext(follow(store, "nope", poll_interval=POLL))
    await store.close()


def test_turn_tracker_ends_when_no_turn_is_open() -> None:
    tracker = TurnTracker()
    start, end = Event("turn/start", 0, 0, {}), Event("turn/end", 1, 0, {})
    assert not tracker.feed(start) and not tracker.feed(start)
    assert not tracker.feed(end), "one turn still open"
    assert tracker.feed(end)
    assert tracker.feed(end), "a turn/end with no open turn (started before following) also ends it"


def test_only_postgres_listens() -> None:
    assert isinstance(PostgresEventStore("postgresql://db.invalid/x"), ListeningStore)
    assert not isinstance(MemoryEventStore(), ListeningStore)


# -- PostgreSQL: LISTEN/NOTIFY ----------------------------------------------------------------


@pytest.fixture
def pg_url() -> Iterator[str]:
    server = server_url()
    reason = unreachable_reason(server)
    if reason is not None:
        pytest.skip(reason)
    schema = new_schema_name()
    yield with_schema(server, schema)
    drop_schema(server, schema)


@pytest.mark.postgres
async def test_postgres_follow_is_woken_by_notify(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # only a notification can wake it: a batch that comes at all within the guard came by NOTIFY
    monkeypatch.setattr(tail_module, "LISTEN_SAFETY_POLL", 3600.0)
    writer, reader = PostgresEventStore(pg_url), PostgresEventStore(pg_url)
    await writer.create(HEADER)
    await writer.create(SessionHeader(id="other", created_at=1, cwd="/w"))
    await writer.append("s", completed_turns(1))
    got: list[Event] = []

    async def consume() -> None:
        async for event in follow(reader, "s", poll_interval=3600.0):
            got.append(event)

    turn = completed_turn(6, 2)
    async with asyncio.timeout(patience(60)), asyncio.TaskGroup() as tg:
        tg.create_task(consume())
        await _until(lambda: len(got) == 6, "the backlog")
        await writer.append("other", completed_turns(1))  # other sessions' appends yield nothing
        await writer.append("s", turn[:3])
        await _until(lambda: len(got) == 9, "a notified batch")
        await writer.append("s", turn[3:])
    assert got == (await writer.load("s")).events
    await writer.close()
    await reader.close()


@pytest.mark.postgres
async def test_postgres_follow_prints_the_backlog_then_a_live_turn(pg_url: str) -> None:
    writer, reader = PostgresEventStore(pg_url), PostgresEventStore(pg_url)
    await writer.create(HEADER)
    await writer.append("s", completed_turns(1))
    assert await _follow_a_turn(writer, reader) == (await writer.load("s")).events
    await writer.close()
    await reader.close()

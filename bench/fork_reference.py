"""Fork by reference (issue #41 item 2): fork a 1 M-event session, and load the child.

``.venv/bin/python bench/fork_reference.py [--events N] [--postgres URL] [--rounds R]``

For SQLite (and PostgreSQL with ``--postgres``): builds one session of N events (default
1,000,000: completed turns of six events), then measures, as the median of R rounds,
- the **floor**: the same ``store.branch`` of a one-turn session in the same store, in the
  same run (what a fork costs when there is nothing to copy);
- **fork**: ``store.branch(parent, at=<its second-to-last turn>)``, and the bytes it added
  (SQLite: the database file after a WAL checkpoint; PostgreSQL: the tables' total size);
- **load**: ``store.load(child)`` against ``store.load(parent)`` (a plain session of nearly
  the same length: the child is the parent less its last turn, plus its marker), in CPU
  seconds, each loaded first in every other round, the collector emptied before each and the
  loaded log freed outside the timing (loading the child always right after the parent, as
  this bench did before, charged it ~15% of order effects: 1.18× then, 0.96× alternated).
Prints one JSON object. Targets (issue #41): fork ≤ 20 ms and ≤ 16 KB, child load ≤ 1.1×.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dsh.events import SessionHeader
from dsh.store import EventStore, SqliteEventStore
from dsh.store.samples import completed_turns

TURN = 6
BATCH_TURNS = 10_000


async def _fill(store: EventStore, sid: str, events: int) -> int:
    """A session of about ``events`` events (whole turns); its turn count."""
    await store.create(SessionHeader(id=sid, created_at=1, cwd="/bench"))
    turns = events // TURN
    done = 0
    while done < turns:
        n = min(BATCH_TURNS, turns - done)
        await store.append(sid, completed_turns(n, start_seq=done * TURN, first_turn=done + 1))
        done += n
    return turns


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def _load_cpu(store: EventStore, sid: str) -> float:
    """CPU seconds of ``store.load(sid)`` (the read runs in a thread: process time counts it),
    the collector emptied first and the loaded log freed outside the timing."""
    gc.collect()
    start = time.process_time()
    loaded = await store.load(sid)
    spent = time.process_time() - start
    del loaded
    return spent


def _sqlite_bytes(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path.stat().st_size


async def _pg_bytes(url: str) -> int:
    import psycopg

    from dsh.store.postgres_url import parse_postgres_url

    target = parse_postgres_url(url)
    async with await psycopg.AsyncConnection.connect(target.conninfo, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (target.schema,),
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0


Size = Callable[[], Awaitable[int]]


async def measure(store: EventStore, events: int, rounds: int, size: Size) -> dict[str, Any]:
    turns = await _fill(store, "parent", events)
    await _fill(store, "small", TURN)
    at = turns - 1
    floor, fork, added, plain, child = [], [], [], [], []
    for r in range(rounds):
        floor.append(await _timed(lambda r=r: store.branch("small", child_id=f"floor-{r}", at=1)))
        before = await size()
        fork.append(await _timed(lambda r=r: store.branch("parent", child_id=f"child-{r}", at=at)))
        added.append(await size() - before)
        loads = [("parent", plain), (f"child-{r}", child)]
        for sid, into in loads if r % 2 else reversed(loads):  # each first in every other round
            into.append(await _load_cpu(store, sid))
    loaded = await store.load("child-0")
    return {
        "events": turns * TURN,
        "childEvents": len(loaded.events),
        "floorMs": statistics.median(floor) * 1000,
        "forkMs": statistics.median(fork) * 1000,
        "forkBytesAdded": statistics.median(added),
        "forkBytesAddedFirst": added[0],
        "loadPlainS": statistics.median(plain),
        "loadChildS": statistics.median(child),
        "childLoadRatio": statistics.median(child) / statistics.median(plain),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", help="also measure PostgreSQL (a scratch schema= URL)")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        async with SqliteEventStore(path) as store:

            async def sqlite_size() -> int:
                return _sqlite_bytes(path)

            out["sqlite"] = await measure(store, args.events, args.rounds, sqlite_size)
    if args.postgres:
        from dsh.store.postgres import PostgresEventStore

        async with PostgresEventStore(args.postgres) as pg:
            url = args.postgres

            async def pg_size() -> int:
                return await _pg_bytes(url)

            out["postgres"] = await measure(pg, args.events, args.rounds, pg_size)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    asyncio.run(main())

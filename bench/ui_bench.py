"""dsh ui: server time of the sessions page's first page over a store with 10,000 sessions.

Builds a SQLite store (one create_batch: 10,000 sessions of one completed turn, every tenth a
fork child of the one before), then times ``GET /`` through Starlette's TestClient (the
request handled in-process: store listing, 50 row derivations, template rendering). Prints
the cold first request and the median/min of the warm ones; exits 1 when either is
over the budget.

    .venv/bin/python bench/ui_bench.py [--sessions 10000] [--runs 20] [--budget-ms 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from dsh.events import Event, SessionHeader
from dsh.store.base import LoadedSession
from dsh.store.samples import completed_turn
from dsh.store.url import open_store
from dsh.ui.app import create_app


def sessions(count: int) -> list[LoadedSession]:
    out: list[LoadedSession] = []
    base = 1_800_000_000_000
    for i in range(count):
        parent = f"s{i - 1:05d}" if i % 10 == 9 else None
        header = SessionHeader(
            id=f"s{i:05d}", created_at=base + i * 1000, cwd="/work", parent_session=parent, is_seeded=False
        )
        events: list[Event] = completed_turn(0, 1, reply=f"reply {i}", time=base + i * 1000)
        out.append(LoadedSession(header, 0, events))
    return out


async def build(url: str, count: int) -> None:
    store = open_store(url)
    try:
        await store.create_batch(sessions(count))
    finally:
        await store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--budget-ms", type=float, default=200.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:{Path(tmp) / 'bench.db'}"
        started = time.perf_counter()
        asyncio.run(build(url, args.sessions))
        print(f"built {args.sessions} sessions in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        with TestClient(create_app(lambda: open_store(url))) as client:
            t0 = time.perf_counter()
            first = client.get("/")
            cold = (time.perf_counter() - t0) * 1000
            assert first.status_code == 200 and f"of {args.sessions} sessions" in first.text
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                response = client.get("/")
                times.append((time.perf_counter() - t0) * 1000)
                assert response.status_code == 200
    median = statistics.median(times)
    print(
        f"ui sessions page, first page of {args.sessions} sessions (SQLite): cold {cold:.0f} ms, "
        f"warm median {median:.0f} ms, min {min(times):.0f} ms over {args.runs} runs "
        f"(budget {args.budget_ms:.0f} ms)"
    )
    return 0 if max(cold, median) <= args.budget_ms else 1


if __name__ == "__main__":
    sys.exit(main())

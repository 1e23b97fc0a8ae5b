"""PostgreSQL store benchmark: W1 (a long conversation) and aggregate append throughput of N writers.

Run from the repository root::

    .venv/bin/python bench/postgres_bench.py [--quick] [--url postgresql://...] [--runs N]

W1 (``bench/README.md``): T turns, each turn/start, step/start, user/message
(~200 chars), assistant/message whose ``stream.chunks`` holds 40 text deltas of ~8 chars,
step/end, turn/end (the first turn also logs a request/header), appended as one durable
batch per turn (one transaction, committed and flushed at every turn end). Measured: append
total and per-turn growth (median of the last 10% of turns ÷ the first 10%), cold load
(connect, check the schema, read every event) in a fresh process, a ``subagent_fork``-style
seeded child holding the first T/2 turns (time and bytes added), and the store's own
``fork()`` (one ``INSERT ... SELECT`` of the whole completed-turn prefix). The embedded
SQLite store runs the same workload as a reference. Throughput: 1, 4 and 8 writer
processes, each appending W1 turns to its own session, started together.

Every run works in a fresh schema ``dsh_bench_<random>`` that is dropped afterwards. The
server is ``--url``, else ``$DSH_TEST_POSTGRES_URL``, else the local test server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from dsh.events import Event, SessionHeader
from dsh.events import chunks as ck
from dsh.events.messages import assistant_message, user_message
from dsh.store import EventStore, SqliteEventStore
from dsh.store.postgres import PostgresEventStore
from dsh.store.postgres_testing import (
    drop_schema,
    new_schema_name,
    server_url,
    unreachable_reason,
    with_schema,
)
from dsh.store.postgres_url import parse_postgres_url

USER_CHARS = 200
DELTAS = 40
DELTA_CHARS = 8
USAGE = {"inputTokens": 120, "outputTokens": 80}
TEXT = (
    "the session log keeps every delta of the stream so a replay is exact and a fork child "
    "inherits the completed turns of its parent while the store stays append only durable and "
    "small enough to read back quickly after a crash or a restart of the agent harness"
)
WORDS = TEXT.split()
PARENT = "parent"
CHILD = "child"

# -- the workload -----------------------------------------------------------------------------


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < size:
        out.append(rng.choice(WORDS))
    return " ".join(out)[:size]


def w1_turn(rng: random.Random, seq: int, turn: int, time_ms: int) -> list[Event]:
    """One W1 turn starting at ``seq`` (turn numbers from 1)."""
    user = f"[{turn}] " + _text(rng, USER_CHARS - len(f"[{turn}] "))
    reply = _text(rng, DELTAS * DELTA_CHARS)
    deltas = [reply[k * DELTA_CHARS : (k + 1) * DELTA_CHARS] for k in range(DELTAS)]
    block = {"type": "text", "text": reply}
    chunks = [
        ck.block_start(0, "text"),
        *(ck.text_delta(0, d) for d in deltas),
        ck.block_end(0, block),
        ck.usage_chunk(USAGE),  # type: ignore[arg-type]
        ck.finish("stop"),
    ]
    stream = {"chunks": chunks, "dt": [rng.randint(5, 40) for _ in range(len(chunks) - 1)]}
    message = assistant_message([block], provider="bench", model="bench-model")
    events = [
        Event("turn/start", seq, time_ms, {"turn": turn}),
        Event("step/start", seq + 1, time_ms, {"turn": turn, "step": 1}),
        Event("user/message", seq + 2, time_ms, user_message(user), "append"),
    ]
    if turn == 1:
        header = {"config": {"provider": "bench", "model": "bench-model"}, "system": "You are a benchmark."}
        events.append(Event("request/header", seq + 3, time_ms, {"header": header, "reason": "initial"}))
    settled = {"turn": turn, "step": 1, "message": message, "usage": USAGE, "stream": stream}
    n = seq + len(events)
    events += [
        Event("assistant/message", n, time_ms + 500, settled, "append"),
        Event("step/end", n + 1, time_ms + 500, {"turn": turn, "step": 1}),
        Event("turn/end", n + 2, time_ms + 500, {"turn": turn, "reason": {"kind": "completed"}}),
    ]
    return events


def w1_turns(count: int, seed: int = 7) -> list[list[Event]]:
    rng = random.Random(seed)
    turns: list[list[Event]] = []
    seq = 0
    for i in range(count):
        turn = w1_turn(rng, seq, i + 1, 1_700_000_000_000 + i * 1000)
        turns.append(turn)
        seq += len(turn)
    return turns


# -- measurements -----------------------------------------------------------------------------


def growth(per_turn: Sequence[float]) -> float:
    n = max(1, len(per_turn) // 10)
    first = statistics.median(per_turn[:n])
    return statistics.median(per_turn[-n:]) / first if first > 0 else float("nan")


def pg_bytes(url: str) -> int:
    """Bytes of the dsh tables in the URL's schema: heap, TOAST and indexes."""
    target = parse_postgres_url(url)
    with psycopg.connect(target.conninfo) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(format('%%I.%%I', schemaname, tablename)::regclass)) "
            "FROM pg_tables WHERE schemaname = %s",
            (target.schema,),
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def sqlite_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


@dataclass(slots=True)
class W1Result:
    append_s: float
    growth: float
    cold_load_s: float
    fork_s: float
    fork_bytes: int
    store_fork_s: float
    size: int


def _open(backend: str, where: str) -> EventStore:
    return PostgresEventStore(where) if backend == "postgres" else SqliteEventStore(where)


def _size(backend: str, where: str) -> int:
    return pg_bytes(where) if backend == "postgres" else sqlite_bytes(Path(where))


async def _w1(
    backend: str, where: str, turns: list[list[Event]]
) -> tuple[list[float], float, float, int, int]:
    store = _open(backend, where)
    await store.create(SessionHeader(id=PARENT, created_at=1, cwd="/work"))
    per_turn: list[float] = []
    for events in turns:
        t0 = time.perf_counter()
        await store.append(PARENT, events, durable=True)
        per_turn.append(time.perf_counter() - t0)
    await store.close()
    size = _size(backend, where)
    half = len(turns) // 2
    prefix = [e for turn in turns[:half] for e in turn]
    store = _open(backend, where)
    await store.exists(PARENT)  # connect outside the timer
    t0 = time.perf_counter()
    marker = Event("session/end-seed", len(prefix), 2, {"inherited": True})
    child = SessionHeader(
        id=CHILD, created_at=2, cwd="/work", parent_session=PARENT, origin="subagent",
        delegation_depth=1, is_seeded=True,
    )  # fmt: skip
    await store.create(child, [*prefix, marker], inherited_event_count=len(prefix))
    fork_s = time.perf_counter() - t0
    await store.close()
    fork_bytes = _size(backend, where) - size
    store = _open(backend, where)
    await store.exists(PARENT)
    t0 = time.perf_counter()
    await store.fork(PARENT, child_id="whole-fork")
    store_fork_s = time.perf_counter() - t0
    await store.close()
    return per_turn, fork_s, store_fork_s, fork_bytes, size


def cold_load(backend: str, where: str) -> tuple[float, int]:
    out = subprocess.run(
        [sys.executable, __file__, "--cold-load", backend, where],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return float(result["seconds"]), int(result["events"])


def run_w1(backend: str, where: str, turns: list[list[Event]]) -> W1Result:
    per_turn, fork_s, store_fork_s, fork_bytes, size = asyncio.run(_w1(backend, where, turns))
    seconds, events = cold_load(backend, where)
    assert events == sum(len(t) for t in turns), (events, sum(len(t) for t in turns))
    return W1Result(sum(per_turn), growth(per_turn), seconds, fork_s, fork_bytes, store_fork_s, size)


def _cold_load_child(backend: str, where: str) -> None:
    async def main() -> int:
        store = _open(backend, where)
        loaded = await store.load(PARENT)
        await store.close()
        return len(loaded.events)

    t0 = time.perf_counter()
    events = asyncio.run(main())
    print(json.dumps({"seconds": time.perf_counter() - t0, "events": events}))


# -- throughput: N writer processes -----------------------------------------------------------


def _writer_child(url: str, session_id: str, count: int) -> None:
    turns = w1_turns(count, seed=zlib.crc32(session_id.encode()))

    async def main() -> dict[str, Any]:
        store = PostgresEventStore(url)
        await store.create(SessionHeader(id=session_id, created_at=1, cwd="/work"))
        print("ready", flush=True)
        sys.stdin.readline()
        start = time.monotonic()
        latencies = []
        for events in turns:
            t0 = time.perf_counter()
            await store.append(session_id, events, durable=True)
            latencies.append(time.perf_counter() - t0)
        end = time.monotonic()
        await store.close()
        return {"start": start, "end": end, "latencies": latencies, "events": sum(len(t) for t in turns)}

    print(json.dumps(asyncio.run(main())), flush=True)


@dataclass(slots=True)
class Throughput:
    writers: int
    turns_per_s: float
    events_per_s: float
    p50_ms: float
    p99_ms: float


def run_throughput(url: str, writers: int, turns: int) -> Throughput:
    procs = []
    for i in range(writers):
        argv = [sys.executable, __file__, "--writer", url, f"w{writers}-{i}", str(turns)]
        procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = [json.loads(proc.communicate(timeout=600)[0].strip().splitlines()[-1]) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    latencies = sorted(x for r in reports for x in r["latencies"])
    return Throughput(
        writers,
        writers * turns / wall,
        sum(r["events"] for r in reports) / wall,
        statistics.median(latencies) * 1e3,
        latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3,
    )


# -- driver -----------------------------------------------------------------------------------


@dataclass(slots=True)
class Runs:
    values: list[float] = field(default_factory=list)

    def fmt(self, scale: float, unit: str, digits: int = 2) -> str:
        med = statistics.median(self.values) * scale
        if len(self.values) == 1:
            return f"{med:.{digits}f} {unit}"
        lo, hi = min(self.values) * scale, max(self.values) * scale
        return f"{med:.{digits}f} {unit} ({lo:.{digits}f}–{hi:.{digits}f})"


def _median_table(results: list[W1Result]) -> dict[str, Runs]:
    keys = ("append_s", "growth", "cold_load_s", "fork_s", "fork_bytes", "store_fork_s", "size")
    return {k: Runs([float(getattr(r, k)) for r in results]) for k in keys}


def _w1_row(label: str, t: int, m: dict[str, Runs]) -> list[str]:
    return [
        label,
        str(t),
        m["append_s"].fmt(1, "s", 3),
        m["growth"].fmt(1, "×", 2),
        m["cold_load_s"].fmt(1e3, "ms", 1),
        m["fork_s"].fmt(1e3, "ms", 1),
        m["fork_bytes"].fmt(1e-6, "MB", 1),
        m["store_fork_s"].fmt(1e3, "ms", 1),
        m["size"].fmt(1e-6, "MB", 1),
    ]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(cells)) + " |"

    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def _in_schema(server: str, body: Callable[[str], Any]) -> Any:
    schema = new_schema_name("dsh_bench")
    try:
        return body(with_schema(server, schema))
    finally:
        drop_schema(server, schema)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="T = 200 only, 1 run, short throughput runs")
    parser.add_argument("--url", default=None, help="PostgreSQL server URL (default: the test server)")
    parser.add_argument("--runs", type=int, default=None, help="W1 runs per size (default 3; --quick 1)")
    parser.add_argument("--cold-load", nargs=2, metavar=("BACKEND", "WHERE"), help=argparse.SUPPRESS)
    parser.add_argument("--writer", nargs=3, metavar=("URL", "SESSION", "TURNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_load:
        _cold_load_child(*args.cold_load)
        return
    if args.writer:
        _writer_child(args.writer[0], args.writer[1], int(args.writer[2]))
        return

    server = args.url or server_url()
    reason = unreachable_reason(server)
    if reason is not None:
        sys.exit(f"postgres_bench: {reason}")
    sizes = (200,) if args.quick else (2000, 200)
    runs = args.runs or (1 if args.quick else 3)
    writer_turns = 100 if args.quick else 500
    shown = [parse_postgres_url(a).label if a == args.url else a for a in sys.argv[1:]]
    command = shlex.join([".venv/bin/python", "bench/postgres_bench.py", *shown])
    with psycopg.connect(parse_postgres_url(server).conninfo) as conn:
        version = conn.execute("SHOW server_version").fetchone()
    print(f"# command: {command}")
    label = parse_postgres_url(server).label
    print(f"# PostgreSQL {version[0] if version else '?'} at {label}; {os.cpu_count()} cores;", end=" ")
    print(f"psycopg {psycopg.__version__}; Python {sys.version.split()[0]}")

    rows = []
    for t in sizes:
        turns = w1_turns(t)
        pg_runs: list[W1Result] = []
        lite_runs: list[W1Result] = []
        for _ in range(runs):  # interleaved, so both see the same machine state
            pg_runs.append(_in_schema(server, lambda url, turns=turns: run_w1("postgres", url, turns)))
            with tempfile.TemporaryDirectory() as tmp:
                lite_runs.append(run_w1("sqlite", str(Path(tmp) / "dsh.db"), turns))
        rows.append(_w1_row("dsh PostgreSQL", t, _median_table(pg_runs)))
        rows.append(_w1_row("dsh SQLite (reference)", t, _median_table(lite_runs)))
    print()
    print(f"W1 — medians (min–max) of {runs} run(s); one durable append per turn")
    print(
        table(
            ["store", "T", "append total", "growth", "cold load", "fork T/2", "fork bytes",
             "fork() whole", "size"],
            rows,
        )
    )  # fmt: skip

    thr_rows = []
    for writers in (1, 4, 8):
        result = _in_schema(server, lambda url, w=writers: run_throughput(url, w, writer_turns))
        thr_rows.append(
            [
                str(result.writers),
                f"{result.turns_per_s:,.0f}",
                f"{result.events_per_s:,.0f}",
                f"{result.p50_ms:.2f} ms",
                f"{result.p99_ms:.2f} ms",
            ]
        )
    print()
    print(f"Aggregate append throughput — each writer process appends {writer_turns} W1 turns to its session")
    print(table(["writers", "turns/s", "events/s", "append p50", "append p99"], thr_rows))


if __name__ == "__main__":
    main()

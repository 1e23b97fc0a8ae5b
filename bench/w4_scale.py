"""W4 — long sessions and many sessions: ``python -m bench.w4_scale [--events N ...] [--sessions N ...]``.

Resume: one session of N events in the SQLite store, in dsh's own shape (every stream inside
its settlement) and in the original's (an imported log: ``assistant/chunk`` events, 96% of
them). Timed: ``dsh run -c`` in a fresh process, from its start to its first model request
(a local scripted server), with its peak RSS; side by side with the floor, a fresh Python
process reading the session's rows (seq, type, time) with the standard library.

Listing: N small sessions (two turns each), then ``dsh sessions list -n 50`` and the whole
``dsh sessions list``: CPU time (user + system) of the process, less the CPU time of
``dsh --version`` measured in the same run (start-up).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import conversation
from bench.workload import all_reply_chunks, append_turn
from dsh.events import Event, SessionHeader
from dsh.events.messages import assistant_message
from dsh.session import Session
from dsh.store.samples import completed_turns
from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply

CHUNKS_PER_STEP = 144
"""The original's shape: 144 chunk events a step, 150 events a turn → 96% chunks."""


def dsh_shape(header: SessionHeader, events: int) -> list[Event]:
    conv = conversation(events // 6 + 2)
    chunks = all_reply_chunks(conv)
    session = Session(header)
    turn = 0
    while len(session.events) < events:
        append_turn(session, conv, turn, chunks[turn])
        turn += 1
    return list(session.events)


def original_shape(header: SessionHeader, events: int) -> list[Event]:
    session = Session(header)
    turn = 0
    while len(session.events) < events:
        turn += 1
        session.append("turn/start", {"turn": turn})
        session.append("user/message", {"role": "user", "content": [{"type": "text", "text": f"do {turn}"}]})
        session.append("step/start", {"turn": turn, "step": 1})
        for k in range(CHUNKS_PER_STEP):
            chunk = {"type": "text-delta", "index": 0, "text": f"w{k} "}
            session.append("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk})
        text = "".join(f"w{k} " for k in range(CHUNKS_PER_STEP))
        message = assistant_message([{"type": "text", "text": text}], provider="bench", model="bench-model")
        session.append("assistant/message", {"turn": turn, "step": 1, "message": message})
        session.append("step/end", {"turn": turn, "step": 1})
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return list(session.events)


async def _build_one(db: Path, workspace: Path, shape: str, events: int) -> None:
    header = SessionHeader(id=f"{shape}-{events}", created_at=1, cwd=str(workspace))
    build = dsh_shape if shape == "dsh" else original_shape
    store = SqliteEventStore(db)
    await store.create(header, build(header, events))
    await store.close()


async def _build_many(db: Path, ws: Path, count: int) -> None:
    from dsh.store.base import LoadedSession

    store = SqliteEventStore(db)
    batch = [
        LoadedSession(SessionHeader(id=f"s{i:06d}", created_at=1_000 + i, cwd=str(ws)), 0, completed_turns(2))
        for i in range(count)
    ]
    await store.create_batch(batch)
    await store.close()


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    return {**env, "HOME": str(home), "DSH_API_KEY": "bench-key", "NO_COLOR": "1", "COLUMNS": "160"}


def _cpu_of(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak RSS bytes of one process."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        why = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        raise RuntimeError(f"{' '.join(argv)} failed: {why}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def _dsh(*args: str) -> list[str]:
    return [sys.executable, "-m", "dsh.cli", *args]


_FLOOR = """import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
sql = "SELECT seq, type, time FROM events WHERE session_id = ? ORDER BY seq"
rows = c.execute(sql, (sys.argv[2],)).fetchall()
assert rows"""


def resume_figures(root: Path, shape: str, events: int, rounds: int) -> dict[str, Any]:
    workspace, home = root / "ws", root / "home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    db = root / f"{shape}-{events}.db"
    asyncio.run(_build_one(db, workspace, shape, events))
    env = _env(home)
    firsts, rss, floors = [], [], []
    for _ in range(rounds):
        with OpenAICompatServer() as server:
            server.enqueue(stream_reply(text="ok"))
            start = time.monotonic()
            argv = _dsh("run", "-c", "next", "--store", f"sqlite:{db}", "--base-url", server.base_url)
            argv += ["--model", "bench-model"]
            _, _, peak = _cpu_of(argv, workspace, env)
            firsts.append(server.requests[0].started_at - start)
            rss.append(peak)
        floor_argv = [sys.executable, "-c", _FLOOR, str(db), f"{shape}-{events}"]
        floors.append(_cpu_of(floor_argv, workspace, env)[0])
    first, floor = statistics.median(firsts), statistics.median(floors)
    return {
        "shape": shape,
        "events": events,
        "first_request_s": first,
        "floor_s": floor,
        "ratio": first / floor,
        "peak_rss_mb": max(rss) / 2**20,
        "db_mb": db.stat().st_size / 2**20,
    }


def list_figures(root: Path, count: int, rounds: int) -> dict[str, Any]:
    workspace, home = root / "ws", root / "home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    db = root / f"many-{count}.db"
    asyncio.run(_build_many(db, workspace, count))
    env = _env(home)
    store = ["--store", f"sqlite:{db}"]
    base, top, whole = [], [], []
    for _ in range(rounds):
        base.append(_cpu_of(_dsh("--version"), workspace, env)[1])
        top.append(_cpu_of(_dsh("sessions", "list", "-n", "50", *store), workspace, env)[1])
        whole.append(_cpu_of(_dsh("sessions", "list", *store), workspace, env)[1])
    start_up = statistics.median(base)
    return {
        "sessions": count,
        "startup_cpu_s": start_up,
        "list_n50_cpu_s": statistics.median(top) - start_up,
        "list_all_cpu_s": statistics.median(whole) - start_up,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.w4_scale", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, nargs="*", default=[100_000])
    parser.add_argument("--sessions", type=int, nargs="*", default=[100, 1_000, 10_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    out: dict[str, Any] = {"resume": [], "list": []}
    with tempfile.TemporaryDirectory(prefix="dsh-w4-") as tmp:
        root = Path(tmp)
        for events in args.events:
            for shape in ("dsh", "original"):
                fig = resume_figures(root, shape, events, args.rounds)
                print(json.dumps(fig), file=sys.stderr)
                out["resume"].append(fig)
        for count in args.sessions:
            fig = list_figures(root, count, args.rounds)
            print(json.dumps(fig), file=sys.stderr)
            out["list"].append(fig)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

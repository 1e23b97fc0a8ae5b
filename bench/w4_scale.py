"""W4 — long sessions and many sessions: ``python -m bench.w4_scale [--events N ...] [--sessions N ...]``.

Resume: one session of N events in the SQLite store, in dsh's own shape (every stream inside
its settlement) and in the original's (an imported log: ``assistant/chunk`` events, 96% of
them). Timed: ``dsh run -c`` in a fresh process, from its start to its first model request
(a local scripted server), with its peak RSS; side by side with the floor, a fresh Python
process reading the session's rows (seq, type, time) with the standard library.

Later turns: the session resumed (a copy) runs six turns against a scripted model with the
workspace pass on; the CPU of the first and the median of the later ones — what a long
session costs a turn once open.

Listing: N small sessions (two turns each), then ``dsh sessions list -n 50``, the whole
``dsh sessions list`` and ``dsh sessions tree``: CPU time (user + system) of the process, less
the CPU time of the command's ``--help`` measured in the same run (start-up: Python, the CLI,
the command). The viewer's sessions page (``dsh ui``'s ``GET /``) served in process in a fresh
process: the CPU of its first request (over a copy of the store as built: no listing kept a
digest in it) and of a later one.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
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

FIRST_REQUEST_MAX = 200_000
"""Sessions longer than this are not sent whole to the scripted server (its body limit is
32 MiB; a 1 M-event history is 97 MB): only ``Agent.resume`` is timed for them."""

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


def _store_url(where: str | Path) -> str:
    """The store at ``where``: a store URL (``sqlite:``, ``jsonl:``) as it is, else a SQLite file."""
    text = str(where)
    return text if text.startswith(("sqlite:", "jsonl:")) else f"sqlite:{text}"


def _copy(src: Path, dst: Path) -> None:
    """A fresh copy of a store: a SQLite file or a JSONL directory."""
    if src.is_dir():
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
    else:
        shutil.copyfile(src, dst)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size


async def _to_jsonl(db: Path, root: Path, session_id: str) -> None:
    """The session of the SQLite file ``db`` written into a JSONL store at ``root``."""
    from dsh.store.jsonl import JsonlEventStore

    source, target = SqliteEventStore(db), JsonlEventStore(root)
    loaded = await source.load(session_id)
    await target.create(
        loaded.header, list(loaded.events), inherited_event_count=loaded.inherited_event_count
    )
    await source.close()
    await target.close()


async def _build_many(where: str, ws: Path, count: int) -> None:
    from dsh.store.base import LoadedSession
    from dsh.store.url import open_store

    store = open_store(_store_url(where))
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


def _in_fresh_process(*args: str) -> str:
    """Run this module with ``args`` in a new interpreter; its last stdout line. (The stores are
    built there: a child forked from a bench process that holds them would report its RSS.)"""
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "bench.w4_scale", *args], capture_output=True, text=True, cwd=repo
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench.w4_scale {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def _dsh(*args: str) -> list[str]:
    return [sys.executable, "-m", "dsh.cli", *args]


_FLOOR = """import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
sql = "SELECT seq, type, time FROM events WHERE session_id = ? ORDER BY seq"
rows = c.execute(sql, (sys.argv[2],)).fetchall()
assert rows"""


_FLOOR_JSONL = """import sys
lines = open(sys.argv[1], "rb").read().split(b"\\n")
assert lines"""


async def _resume_once(where: str, session_id: str) -> dict[str, float]:
    """Seconds ``Agent.resume`` takes to open the session for its next turn (imports excluded),
    and this process's peak RSS (bytes)."""
    from dsh.loop import Agent, AgentConfig
    from dsh.model.scripted import ScriptedModel
    from dsh.store.url import open_store

    store = open_store(_store_url(where))
    start = time.perf_counter()
    agent = await Agent.resume(store, session_id, model=ScriptedModel([]), config=AgentConfig(model="m"))
    seconds = time.perf_counter() - start
    await agent.aclose()
    await store.close()
    import resource

    return {"seconds": seconds, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


TURNS = 6
"""Turns a resumed session runs for the later-turn figure (the first one apart: it opens)."""


async def _turns_once(db: Path, session_id: str) -> dict[str, float]:
    """CPU seconds (this process) of :data:`TURNS` turns of the resumed session, a scripted
    model answering, the workspace pass on (instructions, skill catalog, as ``dsh run``): the
    first turn's and the median of the later ones'."""
    from dsh.context import WorkspaceConfig
    from dsh.loop import Agent, AgentConfig
    from dsh.model.scripted import ScriptedModel, text_reply

    store = SqliteEventStore(db)
    model = ScriptedModel([text_reply(f"ok {i}") for i in range(TURNS)])
    config = AgentConfig(model="m", workspace=WorkspaceConfig.inside())
    agent = await Agent.resume(store, session_id, model=model, config=config)
    spent = []
    for i in range(TURNS):
        start = time.process_time()
        await agent.run_turn(f"next {i}")
        spent.append(time.process_time() - start)
    await agent.aclose()
    await store.close()
    return {"first": spent[0], "later": statistics.median(spent[1:])}


def resume_figures(root: Path, shape: str, events: int, rounds: int, kind: str = "sqlite") -> dict[str, Any]:
    """Resume figures of one session; ``kind="jsonl"``: the same session in a JSONL store
    (its later turns not measured)."""
    workspace, home = root / "ws", root / "home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    sid = f"{shape}-{events}"
    db = root / f"{sid}.db"
    if not db.exists():
        _in_fresh_process("--build-one", str(db), str(workspace), shape, str(events))
    where, url = db, f"sqlite:{db}"
    floor_code, floor_arg = _FLOOR, [str(db), sid]
    if kind == "jsonl":
        where = root / f"{sid}-jsonl"
        _in_fresh_process("--to-jsonl", str(db), str(where), sid)
        url = f"jsonl:{where}"
        floor_code, floor_arg = _FLOOR_JSONL, [str(next(where.glob("*.jsonl")))]
    env = _env(home)
    firsts, rss, floors, opens, open_rss = [], [], [], [], []
    for _ in range(rounds):
        opened = json.loads(_in_fresh_process("--resume-once", url, sid))
        opens.append(opened["seconds"])
        open_rss.append(opened["peak_rss"])
        floors.append(_cpu_of([sys.executable, "-c", floor_code, *floor_arg], workspace, env)[0])
        if events > FIRST_REQUEST_MAX:
            continue
        with OpenAICompatServer() as server:
            server.enqueue(stream_reply(text="ok"))
            start = time.monotonic()
            argv = _dsh("run", "-c", "next", "--store", url, "--base-url", server.base_url)
            argv += ["--model", "bench-model"]
            _, _, peak = _cpu_of(argv, workspace, env)
            firsts.append(server.requests[0].started_at - start)
            rss.append(peak)
    floor = statistics.median(floors)
    first = statistics.median(firsts) if firsts else None
    spent: dict[str, float] = {}
    if kind == "sqlite":
        turns = root / f"{sid}-turns.db"  # a copy: the turns grow the session (copied
        shutil.copyfile(db, turns)  # a piece at a time: a child forked from a grown bench reports its RSS)
        spent = json.loads(_in_fresh_process("--turns-once", str(turns), sid))
        turns.unlink()
    size = _size(where)
    if kind == "jsonl":
        _remove(where)
    return {
        "shape": shape,
        "store": kind,
        "events": events,
        "resume_s": statistics.median(opens),
        "resume_rss_mb": max(open_rss) / 2**20,
        "first_request_s": first,
        "floor_s": floor,
        "ratio": None if first is None else first / floor,
        "peak_rss_mb": max(rss) / 2**20 if rss else None,
        "db_mb": size / 2**20,
        "first_turn_cpu_ms": spent["first"] * 1e3 if spent else None,
        "later_turn_cpu_ms": spent["later"] * 1e3 if spent else None,
    }


def list_figures(root: Path, count: int, rounds: int, kind: str = "sqlite") -> dict[str, Any]:
    """The listing figures over ``count`` sessions in a SQLite file or (``kind="jsonl"``) a
    JSONL directory."""
    workspace, home = root / "ws", root / "home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    name = f"many-{count}.db" if kind == "sqlite" else f"many-{count}-jsonl"
    built = root / name
    unlisted = root / f"unlisted-{name}"  # no listing kept a digest in it
    viewed = root / f"viewer-{name}"  # each round's viewer starts from it

    def url(path: Path) -> str:
        return f"{kind}:{path}"

    _in_fresh_process("--build-many", url(built), str(workspace), str(count))
    _copy(built, unlisted)
    env = _env(home)
    store = ["--store", url(built)]
    base, top, whole, tree_base, tree, pages = [], [], [], [], [], []
    for _ in range(rounds):
        base.append(_cpu_of(_dsh("sessions", "list", "--help"), workspace, env)[1])
        top.append(_cpu_of(_dsh("sessions", "list", "-n", "50", *store), workspace, env)[1])
    cold = _cpu_of(_dsh("sessions", "list", *store), workspace, env)[1]  # derives and keeps every digest
    for _ in range(rounds):
        whole.append(_cpu_of(_dsh("sessions", "list", *store), workspace, env)[1])
        tree_base.append(_cpu_of(_dsh("sessions", "tree", "--help"), workspace, env)[1])
        tree.append(_cpu_of(_dsh("sessions", "tree", *store), workspace, env)[1])
        _copy(unlisted, viewed)  # the viewer keeps what it derives: a copy each round
        pages.append(json.loads(_in_fresh_process("--page-once", url(viewed), str(count))))
    _remove(unlisted)
    _remove(viewed)
    start_up = statistics.median(base)
    return {
        "sessions": count,
        "store": kind,
        "startup_cpu_s": start_up,
        "list_n50_cpu_s": statistics.median(top) - start_up,
        "list_all_cold_cpu_s": cold - start_up,
        "list_all_cpu_s": statistics.median(whole) - start_up,
        "tree_cpu_s": statistics.median(tree) - statistics.median(tree_base),
        "viewer_first_page_cpu_s": statistics.median(p["first"] for p in pages),
        "viewer_page_cpu_s": statistics.median(p["later"] for p in pages),
    }


VIEWER_PAGES = 5
"""Pages the viewer serves after its first, for the later-page figure."""


def _page_once(where: str, count: int) -> dict[str, float]:
    """CPU seconds (this process, every thread) of the viewer's sessions page (``GET /``, the
    first page of ``count`` sessions) served in process through Starlette's test client: the
    first request of a viewer just started (its start-up apart), and the median of
    :data:`VIEWER_PAGES` more."""
    from starlette.testclient import TestClient

    from dsh.store.url import open_store
    from dsh.ui.app import create_app

    url = _store_url(where)
    spent = []
    with TestClient(create_app(lambda: open_store(url))) as client:
        for _ in range(1 + VIEWER_PAGES):
            start = time.process_time()
            page = client.get("/")
            spent.append(time.process_time() - start)
            if page.status_code != 200 or f"of {count} sessions" not in page.text:
                raise RuntimeError(
                    f"the viewer's first page of {where}: {page.status_code} {page.text[:200]}"
                )
    return {"first": spent[0], "later": statistics.median(spent[1:])}


WARM_TAILS = 10
"""Back-to-back tail reads per session for the warm figure (the target's figure is the cold
one: each tail read right after ``gc.collect()``, whose walk of the heap leaves the CPU's
caches cold — 0.2-0.5 ms against ~0.1 ms warm for the same read, 2026-12-07)."""

BATCH = 512
"""The original's writer appends in batches of 512 events."""


def _p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def _original_store(root: Path, sessions: int, events: int) -> dict[str, Any]:
    """The original's published shape: ``sessions`` sessions holding ``events`` events in all,
    96% chunks, appended in batches of 512; then read (surface, full), tailed, forked, exported."""
    from dsh.store.transfer import export_session_file

    db = root / "original.db"
    store = SqliteEventStore(db)
    per = events // sessions
    write = 0.0
    for i in range(sessions):
        header = SessionHeader(id=f"orig-{i:03d}", created_at=1_000 + i, cwd="/work")
        log = original_shape(header, per)
        start = time.perf_counter()
        await store.create(header)
        for k in range(0, len(log), BATCH):
            await store.append(header.id, log[k : k + BATCH], durable=True)
        write += time.perf_counter() - start
    await store.close()
    store = SqliteEventStore(db)
    ids = [f"orig-{i:03d}" for i in range(sessions)]
    surface, full, tail, fork = [], [], [], 0.0
    counts: list[int] = []
    for sid in ids:  # a read does not pay for the one before it: the collector emptied before
        gc.collect()  # each, a load's result freed after the reads (freeing it took 12-18 ms)
        start = time.perf_counter()
        loaded = await store.load(sid, streams=False)
        surface.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        whole = await store.load(sid)
        full.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        await store.read_from(sid, len(loaded.events) - 50)
        tail.append(time.perf_counter() - start)
        counts.append(len(loaded.events))
        del whole
    warm = []  # the same tails back to back: no collection between them to leave the CPU's caches cold
    for sid, loaded_count in zip(ids, counts, strict=True):
        for _ in range(WARM_TAILS):
            start = time.perf_counter()
            await store.read_from(sid, loaded_count - 50)
            warm.append(time.perf_counter() - start)
    size = db.stat().st_size + sum(p.stat().st_size for p in root.glob("original.db-*") if p.is_file())
    start = time.perf_counter()
    for sid in ids:
        await store.fork(sid, child_id=f"{sid}-fork")
    fork = time.perf_counter() - start
    zst = root / "zst"
    zst.mkdir()
    for sid in ids:
        await export_session_file(store, sid, zst / f"{sid}.jsonl.zst")
    await store.close()
    return {
        "sessions": sessions,
        "events": per * sessions,
        "write_s": write,
        "sqlite_mb": size / 2**20,
        "surface_read_p50_ms": _p50(surface) * 1e3,
        "full_read_p50_ms": _p50(full) * 1e3,
        "tail50_p50_ms": _p50(tail) * 1e3,
        "tail50_warm_p50_ms": _p50(warm) * 1e3,
        "fork_all_s": fork,
        "zstd_jsonl_mb": sum(p.stat().st_size for p in zst.iterdir()) / 2**20,
    }


def measure(
    root: Path, events: list[int], sessions: list[int], original: tuple[int, int], rounds: int
) -> dict[str, Any]:
    """Every W4 figure, stores written under ``root``."""
    out: dict[str, Any] = {"resume": [], "list": [], "original": None}
    for count in events:
        for shape in ("dsh", "original"):
            out["resume"].append(resume_figures(root, shape, count, rounds))
        if count <= FIRST_REQUEST_MAX:  # the same session in a JSONL store
            out["resume"].append(resume_figures(root, "dsh", count, rounds, "jsonl"))
    for count in sessions:
        out["list"].append(list_figures(root, count, rounds))
    if sessions:  # the most sessions again, in a JSONL store
        out["list"].append(list_figures(root, max(sessions), rounds, "jsonl"))
    if original[0] > 0:
        (root / "orig").mkdir()
        out["original"] = asyncio.run(_original_store(root / "orig", *original))
    return out


def run_w4(quick: bool, progress: Any) -> dict[str, Any]:
    """``make bench``'s W4: the issue's sizes, or small ones with ``--quick``."""
    progress("W4: long sessions and many sessions")
    with tempfile.TemporaryDirectory(prefix="dsh-w4-") as tmp:
        if quick:
            return measure(Path(tmp), [10_000], [100, 1_000], (5, 50_000), 1)
        return measure(Path(tmp), [100_000, 1_000_000], [100, 1_000, 10_000], (105, 2_500_000), 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.w4_scale", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, nargs="*", default=[100_000])
    parser.add_argument("--sessions", type=int, nargs="*", default=[100, 1_000, 10_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--original", type=int, nargs=2, metavar=("SESSIONS", "EVENTS"), default=(105, 2_500_000)
    )
    parser.add_argument("--resume-once", nargs=2, metavar=("STORE", "SESSION"), help=argparse.SUPPRESS)
    parser.add_argument("--turns-once", nargs=2, metavar=("DB", "SESSION"), help=argparse.SUPPRESS)
    parser.add_argument("--build-one", nargs=4, metavar=("DB", "WS", "SHAPE", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--build-many", nargs=3, metavar=("STORE", "WS", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--page-once", nargs=2, metavar=("STORE", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--to-jsonl", nargs=3, metavar=("DB", "DIR", "SESSION"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.resume_once:
        print(json.dumps(asyncio.run(_resume_once(args.resume_once[0], args.resume_once[1]))))
        return 0
    if args.turns_once:
        print(json.dumps(asyncio.run(_turns_once(Path(args.turns_once[0]), args.turns_once[1]))))
        return 0
    if args.build_one:
        db, ws, shape, n = args.build_one
        asyncio.run(_build_one(Path(db), Path(ws), shape, int(n)))
        return 0
    if args.page_once:
        print(json.dumps(_page_once(args.page_once[0], int(args.page_once[1]))))
        return 0
    if args.to_jsonl:
        db, root, sid = args.to_jsonl
        asyncio.run(_to_jsonl(Path(db), Path(root), sid))
        return 0
    if args.build_many:
        where, ws, n = args.build_many
        asyncio.run(_build_many(where, Path(ws), int(n)))
        return 0
    print(f"load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="dsh-w4-") as tmp:
        out = measure(Path(tmp), args.events, args.sessions, tuple(args.original), args.rounds)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

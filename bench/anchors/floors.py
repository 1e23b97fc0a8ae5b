"""The raw floors of W1: the least a system can do to persist the same conversation durably.

- ``jsonl-deltas``: JSONL, one line per streamed delta (plus the user message and the final
  message), ``fsync`` at every turn end — the floor for a log that keeps every delta.
- ``jsonl-messages``: JSONL, the user and the final assistant message only, ``fsync`` per turn.
- ``jsonl-deltas-async``: the every-delta JSONL floor written the way an asyncio program must
  (dsh's stores never block the event loop): each turn's write + ``fsync`` runs in a worker
  thread (``loop.run_in_executor``). Not a target's reference: it shows what the thread
  handoff around ``fsync`` costs on this machine.
- ``sqlite-rows``: stdlib ``sqlite3``, one row per event (user, each delta, final), WAL,
  ``synchronous=FULL``, one transaction per turn.

Fork copies the first T/2 turns (bytes for JSONL, one ``INSERT ... SELECT`` for SQLite) into a
child; cold load reads every record back and decodes it.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from bench.common import Conversation, dir_size, now
from bench.w1_types import W1Run

SESSION = "parent"
CHILD = "child"
_TIME = 1_796_000_000_000


def delta_records(conv: Conversation, i: int, seq: int) -> list[dict[str, Any]]:
    """Turn ``i`` as the original logs a call: the user message, every chunk, the final message."""
    turn = i + 1
    out: list[dict[str, Any]] = [
        {"type": "user/message", "seq": seq, "time": _TIME + seq,
         "data": {"role": "user", "content": [{"type": "text", "text": conv.users[i]}]}},
    ]  # fmt: skip
    for d in conv.deltas[i]:
        s = seq + len(out)
        chunk = {"type": "text-delta", "index": 0, "text": d}
        out.append({"type": "assistant/chunk", "seq": s, "time": _TIME + s,
                    "data": {"turn": turn, "step": 1, "chunk": chunk}})  # fmt: skip
    s = seq + len(out)
    final = {"role": "assistant", "content": [{"type": "text", "text": conv.reply(i)}]}
    out.append({"type": "assistant/message", "seq": s, "time": _TIME + s, "data": final})
    return out


def message_records(conv: Conversation, i: int) -> list[dict[str, Any]]:
    """Turn ``i`` as a messages-only log keeps it: the user and the final assistant message."""
    return [{"role": "user", "content": conv.users[i]}, {"role": "assistant", "content": conv.reply(i)}]


class JsonlFloor:
    """JSONL with ``fsync`` per turn; ``deltas=True`` writes one line per delta."""

    def __init__(self, deltas: bool) -> None:
        self.deltas = deltas
        self.key = "jsonl-deltas" if deltas else "jsonl-messages"
        self.label = (
            "floor: JSONL, one line per delta, fsync per turn"
            if deltas
            else "floor: JSONL, messages only, fsync per turn"
        )

    def run(self, root: Path, conv: Conversation) -> W1Run:
        root.mkdir(parents=True, exist_ok=True)
        path = root / f"{SESSION}.jsonl"
        dumps = orjson.dumps
        per_turn: list[float] = []
        half = conv.turns // 2
        half_offset = 0
        seq = 0
        with open(path, "ab") as f:
            fd = f.fileno()
            for i in range(conv.turns):
                t0 = now()
                if self.deltas:
                    lines = [dumps(r) for r in delta_records(conv, i, seq)]
                else:
                    lines = [dumps(r) for r in message_records(conv, i)]
                seq += len(lines)
                lines.append(b"")
                f.write(b"\n".join(lines))
                f.flush()
                os.fsync(fd)
                per_turn.append(now() - t0)
                if i + 1 == half:
                    half_offset = f.tell()
        size = dir_size(root)
        t0 = now()
        with open(path, "rb") as src:
            prefix = src.read(half_offset)
        with open(root / f"{CHILD}.jsonl", "wb") as dst:
            dst.write(prefix)
            dst.flush()
            os.fsync(dst.fileno())
        fork_s = now() - t0
        return W1Run(per_turn, fork_s, dir_size(root) - size, size)


class AsyncJsonlFloor:
    """The every-delta JSONL floor with each turn's write + ``fsync`` in a worker thread."""

    key = "jsonl-deltas-async"
    label = "floor: JSONL, one line per delta, fsync per turn off the event loop"

    def run(self, root: Path, conv: Conversation) -> W1Run:
        root.mkdir(parents=True, exist_ok=True)
        per_turn, half_offset = asyncio.run(self._append(root / f"{SESSION}.jsonl", conv))
        size = dir_size(root)
        t0 = now()
        with open(root / f"{SESSION}.jsonl", "rb") as src:
            prefix = src.read(half_offset)
        with open(root / f"{CHILD}.jsonl", "wb") as dst:
            dst.write(prefix)
            dst.flush()
            os.fsync(dst.fileno())
        fork_s = now() - t0
        return W1Run(per_turn, fork_s, dir_size(root) - size, size)

    async def _append(self, path: Path, conv: Conversation) -> tuple[list[float], int]:
        loop = asyncio.get_running_loop()
        dumps = orjson.dumps
        per_turn: list[float] = []
        half = conv.turns // 2
        half_offset = 0
        offset = 0
        seq = 0
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

        def write(data: bytes) -> None:
            os.write(fd, data)
            os.fsync(fd)

        try:
            for i in range(conv.turns):
                t0 = now()
                lines = [dumps(r) for r in delta_records(conv, i, seq)]
                seq += len(lines)
                lines.append(b"")
                data = b"\n".join(lines)
                await loop.run_in_executor(None, write, data)
                offset += len(data)
                per_turn.append(now() - t0)
                if i + 1 == half:
                    half_offset = offset
        finally:
            os.close(fd)
        return per_turn, half_offset


def load_jsonl(root: Path) -> int:
    """Cold load: read the parent's file and decode every line."""
    loads = orjson.loads
    with open(root / f"{SESSION}.jsonl", "rb") as f:
        records = [loads(line) for line in f.read().splitlines()]
    return len(records)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


class SqliteFloor:
    """stdlib sqlite3, a row per event, WAL, ``synchronous=FULL``, a transaction per turn."""

    key = "sqlite-rows"
    label = "floor: stdlib sqlite3, row per event, WAL, synchronous=FULL"

    def run(self, root: Path, conv: Conversation) -> W1Run:
        root.mkdir(parents=True, exist_ok=True)
        conn = _connect(root / "floor.db")
        conn.execute(
            "CREATE TABLE events (session TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, "
            "data TEXT NOT NULL, PRIMARY KEY (session, seq))"
        )
        dumps = orjson.dumps
        insert = "INSERT INTO events VALUES (?, ?, ?, ?)"
        per_turn: list[float] = []
        seq = 0
        half = conv.turns // 2
        half_seq = 0
        for i in range(conv.turns):
            t0 = now()
            rows = [
                (SESSION, r["seq"], r["type"], dumps(r["data"]).decode()) for r in delta_records(conv, i, seq)
            ]
            conn.execute("BEGIN")
            conn.executemany(insert, rows)
            conn.execute("COMMIT")
            seq += len(rows)
            per_turn.append(now() - t0)
            if i + 1 == half:
                half_seq = seq
        conn.close()
        size = dir_size(root)
        conn = _connect(root / "floor.db")
        t0 = now()
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO events SELECT ?, seq, type, data FROM events WHERE session = ? AND seq < ?",
            (CHILD, SESSION, half_seq),
        )
        conn.execute("COMMIT")
        fork_s = now() - t0
        conn.close()
        return W1Run(per_turn, fork_s, dir_size(root) - size, size)


def load_sqlite(root: Path) -> int:
    """Cold load: open the database and decode every row of the parent, in order."""
    conn = sqlite3.connect(root / "floor.db")
    loads = orjson.loads
    rows = conn.execute("SELECT seq, type, data FROM events WHERE session = ? ORDER BY seq", (SESSION,))
    records = [(seq, etype, loads(data)) for seq, etype, data in rows]
    conn.close()
    return len(records)

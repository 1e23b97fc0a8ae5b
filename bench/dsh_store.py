"""W1 for dsh's own stores: the loop's events (the settlement with its exact stream), durable
at every turn end, a ``subagent_fork``-style seeded child at T/2, cold load in a fresh process."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.common import Conversation, dir_size, now
from bench.w1_types import W1Run
from bench.workload import all_reply_chunks, append_turn
from dsh.events import Event, SessionHeader
from dsh.events.vocabulary import SESSION_END_SEED
from dsh.ids import now_ms
from dsh.session import Session
from dsh.store import EventStore
from dsh.store.jsonl import JsonlEventStore
from dsh.store.sqlite import SqliteEventStore

SESSION = "parent"
CHILD = "child"


NAMES = {"sqlite": "SQLite", "jsonl": "JSONL", "jsonl-zstd": "JSONL zstd"}
"""The store kinds (``dsh-KIND`` is the W1 system key) and their names in the tables."""


def open_store(kind: str, root: Path) -> EventStore:
    if kind == "sqlite":
        return SqliteEventStore(root / "dsh.db")
    return JsonlEventStore(root / "sessions", compression="zstd" if kind == "jsonl-zstd" else "none")


class DshStore:
    """dsh's ``SqliteEventStore`` or ``JsonlEventStore`` (plain, or ``compression="zstd"``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.key = f"dsh-{kind}"
        self.label = f"dsh {NAMES[kind]} store (every delta, in the settlement)"

    def run(self, root: Path, conv: Conversation) -> W1Run:
        return asyncio.run(self._run(root, conv))

    async def _run(self, root: Path, conv: Conversation) -> W1Run:
        root.mkdir(parents=True, exist_ok=True)
        chunks = all_reply_chunks(conv)
        store = open_store(self.kind, root)
        header = SessionHeader(id=SESSION, created_at=now_ms(), cwd="/work")
        await store.create(header)
        session = Session(header)
        persisted = 0
        per_turn: list[float] = []
        half = conv.turns // 2
        half_len = 0
        for i in range(conv.turns):
            t0 = now()
            append_turn(session, conv, i, chunks[i])
            events = session.events
            await store.append(SESSION, events[persisted:], durable=True)
            persisted = len(events)
            per_turn.append(now() - t0)
            if i + 1 == half:
                half_len = persisted
        await store.close()
        size = dir_size(root)
        # Fork at T/2 the way ``subagent_fork`` does: the parent's in-memory completed-turn
        # prefix plus the tagged marker, created as a seeded child with its explicit cut.
        store = open_store(self.kind, root)
        prefix = list(session.events[:half_len])
        t0 = now()
        marker = Event(SESSION_END_SEED, half_len, now_ms(), {"inherited": True})
        child = SessionHeader(
            id=CHILD, created_at=now_ms(), cwd="/work", parent_session=SESSION, origin="subagent",
            delegation_depth=1, is_seeded=True,
        )  # fmt: skip
        await store.create(child, [*prefix, marker], inherited_event_count=half_len)
        fork_s = now() - t0
        await store.close()
        return W1Run(per_turn, fork_s, dir_size(root) - size, size)


async def _load(kind: str, root: Path) -> int:
    store = open_store(kind, root)
    loaded = await store.load(SESSION)
    await store.close()
    return len(loaded.events)


def load_sqlite(root: Path) -> int:
    return asyncio.run(_load("sqlite", root))


def load_jsonl(root: Path) -> int:
    return asyncio.run(_load("jsonl", root))


def load_jsonl_zstd(root: Path) -> int:
    return asyncio.run(_load("jsonl-zstd", root))

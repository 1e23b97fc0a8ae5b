"""W1 anchor: the OpenAI Agents SDK's ``SQLiteSession`` in its own idiom.

The SDK's runner keeps the conversation as Responses-API items: per turn the user's input
item and the assistant's final output message (no stream). One ``add_items`` per turn (its
own commit, WAL); fork = a new session on the same database given the parent's first T/2
turns of items; cold load = ``get_items()`` in a fresh process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bench.common import Conversation, dir_size, now
from bench.w1_types import W1Run

SESSION = "parent"
CHILD = "child"
DB = "agents.db"


def _items(conv: Conversation, i: int) -> list[Any]:
    return [
        {"role": "user", "content": conv.users[i]},
        {
            "id": f"msg_{i:08d}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": conv.reply(i), "annotations": []}],
        },
    ]


class AgentsSdkSession:
    key = "agents-sqlite"
    label = "OpenAI Agents SDK SQLiteSession (final messages only)"

    def run(self, root: Path, conv: Conversation) -> W1Run:
        return asyncio.run(self._run(root, conv))

    async def _run(self, root: Path, conv: Conversation) -> W1Run:
        from agents.memory import SQLiteSession

        root.mkdir(parents=True, exist_ok=True)
        session = SQLiteSession(SESSION, root / DB)
        per_turn: list[float] = []
        for i in range(conv.turns):
            items = _items(conv, i)
            t0 = now()
            await session.add_items(items)
            per_turn.append(now() - t0)
        session.close()
        size = dir_size(root)
        parent = SQLiteSession(SESSION, root / DB)
        child = SQLiteSession(CHILD, root / DB)
        t0 = now()
        items = await parent.get_items()
        await child.add_items(items[: 2 * (conv.turns // 2)])
        fork_s = now() - t0
        parent.close()
        child.close()
        return W1Run(per_turn, fork_s, dir_size(root) - size, size)


async def _load(root: Path) -> int:
    from agents.memory import SQLiteSession

    session = SQLiteSession(SESSION, root / DB)
    items = await session.get_items()
    session.close()
    return len(items)


def load(root: Path) -> int:
    return asyncio.run(_load(root))


def preload() -> None:
    """Import the SDK before a cold load is timed."""
    import agents.memory  # noqa: F401

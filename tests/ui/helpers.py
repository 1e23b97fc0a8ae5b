"""Stores for the viewer's tests: the bundled subagent-mixed replay and a hostile log."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from dsh.events import Event, SessionHeader
from dsh.loop import Feed
from dsh.snapshot import ScenarioResult, run_scenario
from dsh.snapshot.runner import SCENARIOS
from dsh.store.samples import completed_turn
from dsh.store.url import open_store

T = TypeVar("T")

HOSTILE_ID = "hostile-session"
SCRIPT = "<script>window.__pwned = 1; document.title = 'PWNED'</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'


def run_in_thread(body: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(body())`` on a fresh thread (sync Playwright owns this thread's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(body())).result()


def hostile_turn(seq: int, turn: int, *, time: int = 1_800_000_000_000) -> list[Event]:
    """A completed turn whose prompt, answer, tool call and result all carry HTML and JS."""
    events = completed_turn(seq, turn, reply="x", time=time)
    user = dict(events[2].data)
    user["content"] = [{"type": "text", "text": f"prompt {SCRIPT} {IMG}"}]
    message: dict[str, Any] = dict(events[3].data["message"])
    message["content"] = [
        {"type": "reasoning", "text": f"thinking {SCRIPT}"},
        {"type": "text", "text": f"**bold** answer {SCRIPT} {IMG} [click](javascript:window.__pwned=3)"},
    ]
    events[2] = Event("user/message", seq + 2, time + 1, user, "append")
    events[3] = Event(
        "assistant/message", seq + 3, time + 2, {**events[3].data, "message": message}, "append"
    )
    return events


def replay_subagent_mixed(url: str) -> ScenarioResult:
    """Replay the bundled subagent-mixed scenario into the store at ``url``."""

    async def go() -> ScenarioResult:
        store = open_store(url)
        try:
            return await run_scenario(SCENARIOS / "subagent-mixed", "replay", store=store, feed=Feed())
        finally:
            await store.close()

    result = run_in_thread(go)
    assert result.ok, result.failure_text()
    return result


def add_hostile(url: str) -> None:
    """Store a session whose header and events are full of markup."""

    async def go() -> None:
        store = open_store(url)
        try:
            header = SessionHeader(id=HOSTILE_ID, created_at=1_800_000_000_000, cwd=f"/tmp/{IMG}")
            await store.create(header)
            await store.append(HOSTILE_ID, hostile_turn(0, 1))
            await store.append(
                HOSTILE_ID, [Event("session/title", 6, 1_800_000_000_010, {"title": f"title {SCRIPT}"})]
            )
        finally:
            await store.close()

    run_in_thread(go)


def append_turn(url: str, session_id: str, reply: str) -> None:
    """Append one completed turn answering ``reply`` to ``session_id``."""

    async def go() -> None:
        store = open_store(url)
        try:
            loaded = await store.load(session_id)
            last = max((e.data.get("turn", 0) for e in loaded.events if e.type == "turn/start"), default=0)
            await store.append(session_id, completed_turn(len(loaded.events), last + 1, reply=reply))
        finally:
            await store.close()

    run_in_thread(go)


def store_url(tmp: Path) -> str:
    return f"sqlite:{tmp / 'sessions.db'}"

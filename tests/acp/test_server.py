"""The ACP agent in-process (no subprocess): admission, stop reasons, early cancel, list, shutdown."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError
from acp.schema import ResourceContentBlock, TextContentBlock

from dsh.acp import DshAcpAgent, ReplayModels, Runtime
from dsh.acp.updates import Profile
from dsh.store.memory import MemoryEventStore, MemorySpace
from tests.patience import patience

TEXT: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "cut"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "cut"}},
]


class Conn:
    """Stands in for the connection: records updates."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))


def scenario(tmp: Path, script: list[dict[str, Any]]) -> Path:
    directory = tmp / "scenario"
    directory.mkdir()
    (directory / "replay.override.json").write_text(json.dumps(script))
    return directory


def text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


async def make(
    tmp_path: Path, script: list[dict[str, Any]], profile: Profile = "full", space: MemorySpace | None = None
) -> tuple[DshAcpAgent, Conn, MemoryEventStore]:
    store = MemoryEventStore(space)
    runtime = Runtime(
        store=store, models=ReplayModels(scenario(tmp_path, script)), model_name="m", profile=profile
    )
    agent = DshAcpAgent(runtime)
    conn = Conn()
    agent.on_connect(conn)  # type: ignore[arg-type]
    return agent, conn, store


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[list[DshAcpAgent]]:
    agents: list[DshAcpAgent] = []
    yield agents
    for agent in agents:
        await agent.shutdown()
        await agent.runtime.aclose()


@pytest.mark.parametrize(("profile", "reason"), [("full", "max_tokens"), ("dsh-compat", "end_turn")])
async def test_max_tokens_stop_reason_per_profile(
    tmp_path: Path, cwd: Path, served: list[DshAcpAgent], profile: Profile, reason: str
) -> None:
    finish = {"type": "finish", "reason": {"kind": "max-tokens"}}
    agent, conn, _ = await make(tmp_path, [{"kind": "chunks", "chunks": [*TEXT, finish]}], profile)
    served.append(agent)
    session = await agent.new_session(cwd=str(cwd), mcp_servers=[])
    reply = await agent.prompt(session_id=session.session_id, prompt=[text("go")])
    assert reply.stop_reason == reason
    assert [
        u.content.text for _, u in conn.updates if getattr(u, "session_update", "") == "agent_message_chunk"
    ] == ["cut"]


async def test_resource_links_are_admitted_as_text(
    tmp_path: Path, cwd: Path, served: list[DshAcpAgent]
) -> None:
    finish = {"type": "finish", "reason": {"kind": "stop"}}
    agent, _, store = await make(tmp_path, [{"kind": "chunks", "chunks": [*TEXT, finish]}])
    served.append(agent)
    session = await agent.new_session(cwd=str(cwd), mcp_servers=[])
    link = ResourceContentBlock(type="resource_link", name="a.py", uri="file:///w/a.py")
    await agent.prompt(session_id=session.session_id, prompt=[text("see"), link])
    loaded = await store.load(session.session_id)
    [user] = [
        e.data for e in loaded.events if e.type == "user/message" and e.data["source"]["kind"] == "user"
    ]
    assert user["content"] == [
        {"type": "text", "text": "see"},
        {"type": "text", "text": "[resource_link name=a.py uri=file:///w/a.py]"},
    ]


async def test_cancel_before_the_turn_starts_still_logs_an_aborted_turn(
    tmp_path: Path, cwd: Path, served: list[DshAcpAgent]
) -> None:
    agent, _, store = await make(tmp_path, [{"kind": "hang"}])
    served.append(agent)
    session_id = (await agent.new_session(cwd=str(cwd), mcp_servers=[])).session_id
    prompt = asyncio.create_task(agent.prompt(session_id=session_id, prompt=[text("go")]))
    await asyncio.sleep(0)  # the prompt is admitted and its turn task created, not yet run
    await agent.cancel(session_id=session_id)
    assert (await asyncio.wait_for(prompt, patience(30))).stop_reason == "cancelled"
    loaded = await store.load(session_id)
    assert [e.data["reason"]["kind"] for e in loaded.events if e.type == "turn/end"] == ["aborted"]


async def test_shutdown_cancels_turns_in_flight(tmp_path: Path, cwd: Path) -> None:
    ready = tmp_path / "ready"
    agent, _, store = await make(tmp_path, [{"kind": "hang", "readyFile": str(ready)}])
    session_id = (await agent.new_session(cwd=str(cwd), mcp_servers=[])).session_id
    prompt = asyncio.create_task(agent.prompt(session_id=session_id, prompt=[text("go")]))
    while not ready.exists():
        await asyncio.sleep(0.01)
    await agent.shutdown()
    assert (await asyncio.wait_for(prompt, patience(30))).stop_reason == "cancelled"
    with pytest.raises(RequestError):
        await agent.new_session(cwd=str(cwd), mcp_servers=[])
    loaded = await store.load(session_id)
    assert loaded.events[-1].type == "turn/end" and loaded.events[-1].data["reason"]["kind"] == "aborted"
    await agent.runtime.aclose()


async def test_list_sessions_pages_filters_and_hides_children(
    tmp_path: Path, cwd: Path, served: list[DshAcpAgent]
) -> None:
    agent, _, store = await make(tmp_path, [])
    served.append(agent)
    other = tmp_path / "other"
    other.mkdir()
    ids = [
        (await agent.new_session(cwd=str(cwd if i % 2 else other), mcp_servers=[])).session_id
        for i in range(53)
    ]
    await store.fork(ids[0])
    listed = await agent.list_sessions()
    assert len(listed.sessions) == 50 and listed.next_cursor == "50"
    rest = await agent.list_sessions(cursor=listed.next_cursor)
    assert len(rest.sessions) == 3 and rest.next_cursor is None
    assert {s.session_id for s in [*listed.sessions, *rest.sessions]} == set(ids)
    mine = await agent.list_sessions(cwd=str(cwd) + "/")
    assert len(mine.sessions) == 26 and {s.cwd for s in mine.sessions} == {str(cwd)}
    assert all(s.updated_at and s.updated_at.endswith("Z") for s in mine.sessions)
    with pytest.raises(RequestError):
        await agent.list_sessions(cursor="nope")


async def test_load_in_compat_profile_replays_only_message_text(
    tmp_path: Path, cwd: Path, served: list[DshAcpAgent]
) -> None:
    finish = {"type": "finish", "reason": {"kind": "stop"}}
    reasoning = [{"type": "reasoning-delta", "index": 1, "text": "thinking"}]
    space = MemorySpace()
    agent, _, _ = await make(
        tmp_path, [{"kind": "chunks", "chunks": [*TEXT, *reasoning, finish]}], "dsh-compat", space
    )
    session_id = (await agent.new_session(cwd=str(cwd), mcp_servers=[])).session_id
    await agent.prompt(session_id=session_id, prompt=[text("go")])
    await agent.shutdown()
    await agent.runtime.aclose()

    store = MemoryEventStore(space)
    fresh = DshAcpAgent(
        Runtime(store=store, models=ReplayModels(tmp_path / "scenario"), model_name="m", profile="dsh-compat")
    )
    served.append(fresh)
    conn = Conn()
    fresh.on_connect(conn)  # type: ignore[arg-type]
    await fresh.load_session(cwd=str(cwd), session_id=session_id, mcp_servers=[])
    assert [(u.session_update, u.content.text) for _, u in conn.updates] == [
        ("user_message_chunk", "go"),
        ("agent_message_chunk", "cut"),
    ]


async def test_compat_cancel_shows_the_committed_partial_message(
    tmp_path: Path, cwd: Path, served: list[DshAcpAgent]
) -> None:
    ready = tmp_path / "ready"
    agent, conn, _ = await make(tmp_path, [{"kind": "hang", "readyFile": str(ready)}], "dsh-compat")
    served.append(agent)
    session_id = (await agent.new_session(cwd=str(cwd), mcp_servers=[])).session_id
    prompt = asyncio.create_task(agent.prompt(session_id=session_id, prompt=[text("go")]))
    while not ready.exists():
        await asyncio.sleep(0.01)
    assert conn.updates == []  # nothing committed yet: compat shows no deltas
    await agent.cancel(session_id=session_id)
    assert (await asyncio.wait_for(prompt, patience(30))).stop_reason == "cancelled"
    assert [(u.session_update, u.content.text) for _, u in conn.updates] == [
        ("agent_message_chunk", "partial")
    ]


async def test_list_sessions_takes_each_last_activity_from_the_listing(
    tmp_path: Path, served: list[DshAcpAgent]
) -> None:
    """``session/list`` reads no session's events: the listing's row carries the time of the
    last event (here the last event of each session cannot even be decoded)."""
    import sqlite3
    from datetime import UTC, datetime

    from dsh.events import Event, SessionHeader
    from dsh.store.samples import completed_turns
    from dsh.store.sqlite import SqliteEventStore

    db = tmp_path / "s.db"
    store = SqliteEventStore(db)
    for i, sid in enumerate(("older", "newer")):
        events = [Event(e.type, e.seq, 1_700_000_000_000 + 1_000 * i + e.seq, e.data, e.surface_op)
                  for e in completed_turns(1)]  # fmt: skip
        await store.create(SessionHeader(id=sid, created_at=1_000 + i, cwd=str(tmp_path)), events)
    await store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET data = '{bad' WHERE seq = 5")
    store = SqliteEventStore(db)
    agent = DshAcpAgent(Runtime(store=store, models=ReplayModels(scenario(tmp_path, [])), model_name="m"))
    agent.on_connect(Conn())  # type: ignore[arg-type]
    served.append(agent)
    listed = await agent.list_sessions()
    stamps = [(datetime.fromtimestamp((1_700_000_000_005 + 1_000 * i) / 1000, tz=UTC)) for i in (1, 0)]
    expected = [s.isoformat(timespec="milliseconds").replace("+00:00", "Z") for s in stamps]
    assert [(s.session_id, s.updated_at) for s in listed.sessions] == list(
        zip(["newer", "older"], expected, strict=True)
    )

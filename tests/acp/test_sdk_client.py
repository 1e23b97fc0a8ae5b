"""``dsh acp`` driven by the SDK's client side in a second process: prompt, cancel, load, prompt again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, cast

import pytest
from acp.exceptions import RequestError
from acp.helpers import text_block
from acp.interfaces import Client
from acp.meta import PROTOCOL_VERSION
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ClientCapabilities,
    Implementation,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)
from acp.stdio import spawn_agent_process

from dsh.store.sqlite import SqliteEventStore
from tests.acp.wire import SERVER, SHUTDOWN, TIMEOUT, scenario_copy, server_args, server_env

pytestmark = pytest.mark.fixtures


class Recorder:
    """A minimal ACP client: records every session update (it offers no fs or terminal, so it
    is passed to the SDK as ``cast(Client, ...)``)."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def of(self, kind: type) -> list[Any]:
        return [u for _, u in self.updates if isinstance(u, kind)]

    def text(self, kind: type) -> str:
        return "".join(u.content.text for u in self.of(kind) if isinstance(u.content, TextContentBlock))


async def until_exists(path: Path) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.02)


async def initialize(conn: Any) -> Any:
    return await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="dsh-tests", version="0"),
    )


async def test_prompt_cancel_load_and_prompt_again(tmp_path: Path, upstream: Path) -> None:
    ready = tmp_path / "ready"
    first = scenario_copy(
        upstream / "text-turn",
        tmp_path / "first",
        override={"patches": [{"at": 1, "entry": {"kind": "hang", "readyFile": str(ready)}}]},
    )
    second = scenario_copy(upstream / "text-turn", tmp_path / "second")
    store = f"sqlite:{tmp_path / 'sessions.db'}"
    cwd = tmp_path / "work"
    cwd.mkdir()
    pong = "Reply with exactly the word: PONG. Do not use any tools."

    client = Recorder()
    # stderr stays an unread pipe (the SDK's default): the server must never block on it.
    async with spawn_agent_process(
        cast(Client, client),
        *SERVER,
        *server_args(replay=first, store=store),
        env=server_env(),
        transport_kwargs=SHUTDOWN,
    ) as (conn, proc):
        init = await initialize(conn)
        assert init.protocol_version == 1
        assert init.agent_capabilities.load_session is True
        assert init.agent_capabilities.session_capabilities.list is not None
        assert init.agent_info.name == "dsh"

        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        reply = await conn.prompt(session_id=session_id, prompt=[text_block(pong)])
        assert reply.stop_reason == "end_turn"
        kinds = [type(u).__name__ for _, u in client.updates]
        assert kinds[0] == "AvailableCommandsUpdate"  # the slash commands, after session/new
        assert kinds[1] == "SessionInfoUpdate"  # the session's fallback title, before the model streams
        assert kinds[2] == "AgentThoughtChunk" and kinds[-1] == "UsageUpdate"
        assert client.text(AgentMessageChunk) == "PONG"
        assert "user wants me" in client.text(AgentThoughtChunk)
        assert {s for s, _ in client.updates} == {session_id}

        client.updates.clear()
        hanging = asyncio.create_task(conn.prompt(session_id=session_id, prompt=[text_block("wait")]))
        await until_exists(ready)
        with pytest.raises(RequestError) as second_prompt:
            await conn.prompt(session_id=session_id, prompt=[text_block("and this?")])
        assert second_prompt.value.code == -32602
        assert str(second_prompt.value) == "Invalid params: a prompt is already in flight"
        await conn.cancel(session_id=session_id)
        cancelled = await asyncio.wait_for(hanging, TIMEOUT)
        assert cancelled.stop_reason == "cancelled"
        assert client.text(AgentMessageChunk) == "partial"

        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert relative.value.code == -32602
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
        assert unknown.value.code == -32602
        listed = await conn.list_sessions()
        assert [s.session_id for s in listed.sessions] == [session_id]
        assert listed.sessions[0].cwd == str(cwd)
    assert proc.returncode == 0
    assert proc.stderr is not None and await proc.stderr.read() == b""

    store_obj = SqliteEventStore(tmp_path / "sessions.db")
    try:
        loaded = await store_obj.load(session_id)
    finally:
        await store_obj.close()
    ends = [e.data["reason"] for e in loaded.events if e.type == "turn/end"]
    assert ends == [{"kind": "completed"}, {"kind": "aborted", "reason": {"kind": "user"}}]

    client = Recorder()
    async with spawn_agent_process(
        # The recording is of a fresh session; here it continues one: its history diverges on purpose.
        cast(Client, client),
        *SERVER,
        *server_args(replay=second, store=store),
        "--drift",
        "warn",
        env=server_env(),
        transport_kwargs=SHUTDOWN,
    ) as (conn, proc):
        await initialize(conn)
        await conn.load_session(cwd=str(cwd), session_id=session_id, mcp_servers=[])
        history = [type(u).__name__ for _, u in client.updates]
        assert history == [
            "UserMessageChunk",
            "AgentThoughtChunk",
            "AgentMessageChunk",
            "UserMessageChunk",
            "AgentMessageChunk",
            "AvailableCommandsUpdate",  # after the history: the slash commands
        ]
        assert [u.content.text for u in client.of(UserMessageChunk)] == [pong, "wait"]
        assert [u.content.text for u in client.of(AgentMessageChunk)] == ["PONG", "partial"]
        assert all(u.message_id for u in client.of(AgentMessageChunk))

        client.updates.clear()
        again = await conn.prompt(session_id=session_id, prompt=[text_block(pong)])
        assert again.stop_reason == "end_turn"
        assert client.text(AgentMessageChunk) == "PONG"
        assert len(client.of(UsageUpdate)) == 1
    assert proc.returncode == 0


async def test_tool_calls_stream_with_status_and_result(tmp_path: Path, upstream: Path) -> None:
    scenario = upstream / "tool-call-turn"
    cwd = tmp_path / "work"
    cwd.mkdir()
    client = Recorder()
    async with spawn_agent_process(
        cast(Client, client),
        *SERVER,
        *server_args(replay=scenario, store=f"sqlite:{tmp_path / 's.db'}"),
        env=server_env(),
        transport_kwargs=SHUTDOWN,
    ) as (conn, _):
        await initialize(conn)
        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        text = (
            "Use the bash tool to run exactly: echo SNAPSHOT_OK. "
            "Then reply with the single word DONE and stop."
        )
        reply = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    assert reply.stop_reason == "end_turn"
    [start] = client.of(ToolCallStart)
    [done] = client.of(ToolCallProgress)
    assert (start.kind, start.status, start.title) == ("execute", "in_progress", "Run echo SNAPSHOT_OK")
    assert start.raw_input["command"] == "echo SNAPSHOT_OK"
    assert done.tool_call_id == start.tool_call_id and done.status == "completed"
    assert "SNAPSHOT_OK" in done.content[0].content.text
    assert client.text(AgentMessageChunk) == "DONE"

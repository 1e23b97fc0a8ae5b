"""ACP ``session/fork`` (the SDK's unstable protocol): a user's branch at a turn, or refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from acp.exceptions import RequestError
from acp.interfaces import Client
from acp.stdio import spawn_agent_process

from dsh.events import SessionHeader
from dsh.store.samples import completed_turns
from dsh.store.sqlite import SqliteEventStore
from tests.acp.test_sdk_client import Recorder, initialize
from tests.acp.wire import SERVER, SHUTDOWN, scenario_copy, server_args, server_env

pytestmark = pytest.mark.fixtures


async def _six_turns(db: Path, cwd: Path) -> list[Any]:
    store = SqliteEventStore(db)
    events = completed_turns(6)
    await store.create(SessionHeader(id="parent", created_at=1_000, cwd=str(cwd)), events)
    await store.close()
    return events


async def test_fork_at_turn_3_of_six_through_acp(tmp_path: Path, upstream: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    db = tmp_path / "sessions.db"
    events = await _six_turns(db, cwd)
    replay = scenario_copy(upstream / "text-turn", tmp_path / "scenario")
    async with spawn_agent_process(
        cast(Client, Recorder()),
        *SERVER,
        *server_args(replay=replay, store=f"sqlite:{db}"),
        env=server_env(),
        transport_kwargs=SHUTDOWN,
        use_unstable_protocol=True,
    ) as (conn, _proc):
        init = await initialize(conn)
        assert init.agent_capabilities.session_capabilities.fork is not None
        forked = await conn.fork_session(session_id="parent", cwd=str(cwd), dsh={"atTurn": 3})
        tail = await conn.fork_session(session_id="parent", cwd=str(cwd))
        refused = []
        for meta in ({"dsh": {"atTurn": 9}}, {"dsh": {"atTurn": "3"}}):
            with pytest.raises(RequestError) as bad:
                await conn.fork_session(session_id="parent", cwd=str(cwd), **meta)
            refused.append(bad.value)
        with pytest.raises(RequestError) as unknown:
            await conn.fork_session(session_id="nope", cwd=str(cwd))
    assert [e.code for e in (*refused, unknown.value)] == [-32602, -32602, -32602]
    assert "parent" in str(refused[0]) and "atTurn" in str(refused[1]) and "nope" in str(unknown.value)
    store = SqliteEventStore(db)
    try:
        child = await store.load(forked.session_id)
        whole = await store.load(tail.session_id)
    finally:
        await store.close()
    cut = 18  # three completed turns of six events each
    assert child.inherited_event_count == cut and child.events[:cut] == events[:cut]
    assert child.header.parent_session == "parent" and not child.header.is_subagent
    assert whole.inherited_event_count == len(events), "no turn named: the last completed turn"

"""A fork child keeps its parent's prompt-cache prefix (issue 43): its first request repeats,
byte for byte, the parent's last request before the cut — tools, system prompt, history —
then adds its own. One test per way a fork child is made: the ``subagent_fork`` tool (in
the foreground and in the background), the library's ``Agent.fork`` and ``dsh sessions
fork``. Checked twice: on the wire the local server received, and by ``dsh.replay.prefix``
on the stored logs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.replay.reuse import tree_reuse
from dsh.store.sqlite import SqliteEventStore
from dsh.subagents import standard_tools
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from tests.subagents.test_background_http import background_fork_tools, settle

REMEMBER, TASK = "REMEMBER 42", "FORK TASK"


def _reply(text: str) -> Response:
    return stream_reply(text=text)


def _fork_call(background: bool = False) -> Response:
    args: dict[str, Any] = {"description": "recall", "prompt": TASK}
    if background:
        args["run_in_background"] = True
    return stream_reply(tool_calls=[WireToolCall.split("c_f", "subagent_fork", json.dumps(args), 2)])


def _handler(background: bool = False) -> Any:
    def handler(req: RecordedRequest) -> Response:
        if req.prompt == REMEMBER:
            return _reply("NOTED 42")
        if req.prompt == TASK:
            return _reply("THE NUMBER IS 42")
        if any(m.get("role") == "tool" for m in req.messages):
            return _reply("FORK DONE")
        return _fork_call(background)

    return handler


def _wire(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=False).encode()


def assert_extends_on_the_wire(requests: list[RecordedRequest]) -> None:
    """The child's first request starts with the parent's request at the cut, byte for byte."""
    parent = next(r for r in requests if r.prompt == REMEMBER)  # the parent's last request of turn 1
    child = next(r for r in requests if r.prompt == TASK)
    assert _wire(child.json.get("tools")) == _wire(parent.json.get("tools")), "the same tools, same order"
    shared = parent.messages
    assert _wire(child.messages[: len(shared)]) == _wire(shared), "system prompt and history repeated"
    assert len(child.messages) > len(shared)


async def assert_extends_in_the_log(store: SqliteEventStore, parent_id: str) -> None:
    sessions = {s.header.id: await store.load(s.header.id) for s in await store.list_sessions()}
    (child,) = [s for s in sessions.values() if s.header.parent_session == parent_id]
    assert child.inherited_event_count > 0, "a fork child inherits the completed turn"
    first = next(r for r in tree_reuse(sessions, parent_id) if r.session == child.header.id)
    assert first.against == "the parent's request at the cut" and first.broke is None, first.line()
    parent_first = next(r for r in tree_reuse(sessions, parent_id) if r.session == parent_id)
    assert first.shared == parent_first.size, "every byte of the parent's request at the cut"


async def _parent(server: OpenAICompatServer, store: SqliteEventStore, cwd: Path, background: bool) -> Agent:
    model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
    tools = background_fork_tools() if background else standard_tools()
    return await Agent.create(
        store, model=model, tools=tools, config=AgentConfig(model="m", retry=NO_DELAY), cwd=cwd
    )


async def test_a_subagent_fork_tool_child_repeats_the_parents_request_at_the_cut(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=_handler()) as server:
        parent = await _parent(server, store, tmp_path, background=False)
        assert (await parent.run_turn(REMEMBER)).ok
        assert (await parent.run_turn("fork it")).text == "FORK DONE"
        await parent.model.aclose()
        assert_extends_on_the_wire(server.requests)
    await assert_extends_in_the_log(store, parent.id)
    await parent.aclose()


async def test_a_background_fork_child_repeats_the_parents_request_at_the_cut(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=_handler(background=True)) as server:
        parent = await _parent(server, store, tmp_path, background=True)
        assert (await parent.run_turn(REMEMBER)).ok
        assert (await parent.run_turn("fork it")).ok
        await settle(parent)
        await parent.model.aclose()
        assert_extends_on_the_wire(server.requests)
    await assert_extends_in_the_log(store, parent.id)
    await parent.aclose()


async def test_a_library_fork_child_repeats_the_parents_request_at_the_cut(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=_handler()) as server:
        parent = await _parent(server, store, tmp_path, background=False)
        assert (await parent.run_turn(REMEMBER)).ok
        child = await parent.fork()
        assert (await child.run_turn(TASK)).text == "THE NUMBER IS 42"
        await parent.model.aclose()
        assert_extends_on_the_wire(server.requests)
    await assert_extends_in_the_log(store, parent.id)
    await child.aclose()
    await parent.aclose()


def _dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_STORE": f"sqlite:{tmp_path / 's.db'}", "NO_COLOR": "1", "DSH_API_KEY": "sk-test"})
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_a_cli_fork_child_repeats_the_parents_request_at_the_cut(tmp_path: Path) -> None:
    """``dsh sessions fork`` makes the child (a store-level copy of the completed turns); the
    child is continued through the library with its parent's tools and config (the CLI does
    not resume a subagent as a top-level session)."""

    async def parent_turn(server: OpenAICompatServer) -> str:
        store = SqliteEventStore(tmp_path / "s.db")
        parent = await _parent(server, store, tmp_path, background=False)
        try:
            assert (await parent.run_turn(REMEMBER)).ok
            return parent.id
        finally:
            await parent.model.aclose()
            await parent.aclose()
            await store.close()

    async def child_turn(server: OpenAICompatServer, child_id: str) -> None:
        store = SqliteEventStore(tmp_path / "s.db")
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        child = await Agent.resume(
            store,
            child_id,
            model=model,
            tools=standard_tools(),
            config=AgentConfig(model="m", retry=NO_DELAY),
        )
        try:
            assert (await child.run_turn(TASK)).text == "THE NUMBER IS 42"
            await assert_extends_in_the_log(store, parent)
        finally:
            await model.aclose()
            await child.aclose()
            await store.close()

    with OpenAICompatServer(handler=_handler()) as server:  # a thread: serves while the CLI runs
        parent = asyncio.run(parent_turn(server))
        forked = _dsh(tmp_path, "sessions", "fork", parent, "--json")
        assert forked.returncode == 0, forked.stderr
        asyncio.run(child_turn(server, json.loads(forked.stdout)["id"]))
        assert_extends_on_the_wire(server.requests)

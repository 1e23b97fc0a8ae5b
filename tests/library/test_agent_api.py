"""The agent from code: defaults, fork / spawn, typed streaming, run_sync, from_env."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh import (
    Agent,
    AgentConfig,
    ChildFinished,
    ChildStarted,
    MemoryEventStore,
    ScriptedModel,
    SqliteEventStore,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolRegistry,
    TurnFinished,
    open_store,
    standard_tools,
    tool,
)
from dsh.errors import MissingCredentialError, UsageError
from dsh.model.scripted import text_reply, tool_call_reply
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.invariants import check_log_invariants


@tool
def shout(word: str) -> str:
    """Upper-case a word."""
    return word.upper()


async def test_tools_are_added_to_the_standard_ones_unless_told_otherwise(tmp_path: Path) -> None:
    store = MemoryEventStore()
    model = ScriptedModel([], model="m")
    with_std = await Agent.create(store, model=model, tools=[shout], cwd=tmp_path)
    assert with_std.tools.names() == sorted([*standard_tools().names(), "shout"])
    assert {"read", "write", "edit", "glob", "bash", "subagent", "subagent_fork"} <= set(
        with_std.tools.names()
    )
    only = await Agent.create(store, model=model, tools=[shout], standard_tools=False, cwd=tmp_path)
    assert only.tools.names() == ["shout"]

    def plain(n: int) -> int:
        """A plain typed function is made a tool too."""
        return n + 1

    mine = await Agent.create(store, model=model, tools=[plain], standard_tools=False, cwd=tmp_path)
    assert mine.tools.names() == ["plain"]
    registry = ToolRegistry([shout])
    assert (await Agent.create(store, model=model, tools=registry, cwd=tmp_path)).tools is registry
    with pytest.raises(UsageError, match="a registry is the whole tool set"):
        await Agent.create(store, model=model, tools=registry, standard_tools=True, cwd=tmp_path)
    with pytest.raises(UsageError, match="already registered"):
        await Agent.create(store, model=model, tools=[shout, shout], cwd=tmp_path)


async def test_the_model_name_is_given_once(tmp_path: Path) -> None:
    store = MemoryEventStore()
    named = ScriptedModel([text_reply("hi")], model="from-the-model")
    agent = await Agent.create(store, model=named, cwd=tmp_path, config=AgentConfig(system="be brief"))
    assert agent.config.model == "from-the-model" and agent.config.system == "be brief"
    await agent.run_turn("hello")
    assert named.requests[0].model == "from-the-model"
    explicit = await Agent.create(store, model=named, cwd=tmp_path, config=AgentConfig(model="other"))
    assert explicit.config.model == "other"
    with pytest.raises(UsageError, match="no model name for 'scripted'"):
        await Agent.create(store, model=ScriptedModel([]), cwd=tmp_path)


async def test_fork_and_spawn_persist_their_cut(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    model = ScriptedModel([text_reply("one"), text_reply("forked"), text_reply("spawned")], model="m")
    async with store, await Agent.create(store, model=model, cwd=tmp_path) as agent:
        await agent.run_turn("first")
        prefix = len(agent.session.events)
        forked = await agent.fork()
        spawned = await agent.spawn()
        await forked.run_turn("again")
        await spawned.run_turn("fresh")
        parent, f, s = [await store.load(x.id) for x in (agent, forked, spawned)]
        for loaded in (parent, f, s):
            check_log_invariants(loaded.events)
        assert (f.inherited_event_count, f.header.is_seeded) == (prefix, True)
        assert f.events[:prefix] == parent.events
        assert (s.inherited_event_count, s.header.is_seeded, s.events[0].type) == (0, False, "turn/start")
        for child in (f, s):
            assert child.header.parent_session == agent.id and child.header.origin == "subagent"
            assert child.header.delegation_depth == 1
        assert {c.header.id for c in await store.children(agent.id)} == {forked.id, spawned.id}
        # the forked child's request held the inherited turn; the spawned one's did not
        assert [m["role"] for m in model.requests[1].messages] == ["user", "assistant", "user"]
        assert [m["role"] for m in model.requests[2].messages] == ["user"]


async def test_stream_yields_typed_events_of_the_turn_and_its_children(tmp_path: Path) -> None:
    def script(request: Any, index: int) -> list[Any]:
        last = request.messages[-1]
        if request.session_id != root_id[0]:
            return text_reply("child says hi", deltas=2)
        if last["role"] == "user" and last["source"]["kind"] == "user":
            return tool_call_reply("c1", "subagent", {"description": "greet", "prompt": "say hi"})
        return text_reply("done", deltas=2)

    root_id: list[str] = []
    model = ScriptedModel(script, model="m")
    agent = await Agent.create(MemoryEventStore(), model=model, cwd=tmp_path)
    root_id.append(agent.id)
    events = [event async for event in agent.stream("delegate")]
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "ToolCallStarted", "ChildStarted", "TextDelta", "TextDelta", "ChildFinished",
        "ToolCallFinished", "TextDelta", "TextDelta", "TurnFinished",
    ]  # fmt: skip
    call, started, finished_child = events[0], events[1], events[4]
    assert isinstance(call, ToolCallStarted) and call.name == "subagent" and call.session_id == agent.id
    assert isinstance(started, ChildStarted) and started.parent_id == agent.id
    assert (started.kind, started.label, started.call_id) == ("spawn", "greet", "c1")
    child_deltas = [e for e in events[2:4] if isinstance(e, TextDelta)]
    assert "".join(d.text for d in child_deltas) == "child says hi"
    assert all(d.session_id == started.session_id for d in child_deltas)
    assert isinstance(finished_child, ChildFinished) and finished_child.reason == "completed"
    result = events[5]
    assert isinstance(result, ToolCallFinished) and result.text == "child says hi" and not result.is_error
    last = events[-1]
    assert isinstance(last, TurnFinished) and last.result.text == "done" and last.result.ok
    assert agent.feed.event_listeners == [] and agent.feed.chunk_listeners == []


async def test_leaving_the_stream_early_cancels_the_turn(tmp_path: Path) -> None:
    model = ScriptedModel([text_reply("a b c d", deltas=4)], model="m", delay=0.01)
    store = MemoryEventStore()
    agent = await Agent.create(store, model=model, cwd=tmp_path)
    async with contextlib.aclosing(agent.stream("go")) as events_:
        async for event in events_:
            assert isinstance(event, TextDelta)
            break
    events = (await store.load(agent.id)).events
    assert events[-1].type == "turn/end" and events[-1].data["reason"]["kind"] == "aborted"


def test_run_sync_drives_an_agent_from_a_plain_script(tmp_path: Path) -> None:
    script = f"""
from dsh import Agent, OpenAICompatModel, open_store, run_sync
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply

server = OpenAICompatServer([stream_reply(text="first"), stream_reply(text="second")])
server.start_in_thread()
store = open_store("sqlite:{tmp_path / "s.db"}")
# the model's connection pool belongs to the loop of the first call: every call must share it
model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test", model="m")
agent = run_sync(Agent.create(store, model=model, cwd="."))
print(agent.run_sync("one").text)
print(run_sync(agent.run_turn("two")).text)
run_sync(agent.aclose())
run_sync(model.aclose())
run_sync(store.close())
server.stop_thread()
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["first", "second"]


async def test_run_sync_inside_a_loop_is_a_usage_error(tmp_path: Path) -> None:
    from dsh import run_sync

    async def nothing() -> None:
        return None

    with pytest.raises(UsageError, match="inside a running event loop"):
        run_sync(nothing())


async def test_from_env_uses_the_configured_provider_and_store(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'env.db'}"
    async with OpenAICompatServer([stream_reply(text="from env")]) as server:
        env = {
            "DSH_API_KEY": "sk-env",
            "DSH_BASE_URL": server.base_url,
            "DSH_MODEL": "env-model",
            "DSH_STORE": url,
        }
        async with await Agent.from_env(cwd=tmp_path, env=env) as agent:
            result = await agent.run_turn("hi")
            sid = agent.id
    assert result.text == "from env"
    assert server.requests[0].json["model"] == "env-model"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"
    async with open_store(url) as store:  # from_env's store was closed with the agent; the log is there
        assert (await store.load(sid)).events[-1].type == "turn/end"
    with pytest.raises(MissingCredentialError, match="no API key"):
        await Agent.from_env(cwd=tmp_path, env={})


async def test_stores_close_with_async_with(tmp_path: Path) -> None:
    from dsh.errors import StoreClosedError

    async with open_store(f"jsonl:{tmp_path / 'logs'}") as store:
        assert await store.list_sessions() == []
    with pytest.raises(StoreClosedError):
        await store.list_sessions()
    json.dumps({})


def test_run_sync_calls_share_one_event_loop_per_thread() -> None:
    import asyncio
    import threading

    from dsh import run_sync

    async def current() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    first, second = run_sync(current()), run_sync(current())
    assert first is second and not first.is_closed()  # objects bound to it stay usable
    other: list[asyncio.AbstractEventLoop] = []
    thread = threading.Thread(target=lambda: other.append(run_sync(current())))
    thread.start()
    thread.join()
    assert other[0] is not first

"""Background (continuable) children over real HTTP: concurrency, send_message, interrupt, settlement."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store import EventStore
from dsh.store.sqlite import SqliteEventStore
from dsh.subagents import ForkTool, SubagentTool, standard_tools, subagent_tools
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from dsh.tools.registry import ToolRegistry, builtin_registry
from tests.invariants import check_log_invariants

STARTED = re.compile(r"started subagent ([0-9a-f-]{36})")


def reply(text: str, gate: int | None = None) -> Response:
    return stream_reply(text=text, gate=gate)


def call(*calls: tuple[str, str, dict[str, Any]]) -> Response:
    return stream_reply(tool_calls=[WireToolCall.split(c, n, json.dumps(a), 2) for c, n, a in calls])


def texts(req: RecordedRequest, role: str) -> list[str]:
    return [str(m.get("content")) for m in req.messages if m.get("role") == role]


def first_user(req: RecordedRequest) -> str:
    users = texts(req, "user")
    return users[0] if users else ""


def started_ids(req: RecordedRequest) -> list[str]:
    return [m.group(1) for t in texts(req, "tool") for m in STARTED.finditer(t)]


async def make_parent(server: OpenAICompatServer, store: EventStore, cwd: Path) -> Agent:
    model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
    return await Agent.create(
        store, model=model, tools=standard_tools(), config=AgentConfig(model="m", retry=NO_DELAY), cwd=cwd
    )


async def settle(parent: Agent) -> None:
    tool = parent.tools.get("subagent")
    assert isinstance(tool, SubagentTool)
    assert await tool.children.settle(10.0), "the children did not settle"


def user_messages(agent: Agent) -> list[dict[str, Any]]:
    return [e.data for e in agent.session.events if e.type == "user/message"]


def notices(agent: Agent) -> list[list[str]]:
    return [
        [b["text"] for b in m["content"]]
        for m in user_messages(agent)
        if m["source"].get("kind") == "subagent-settled"
    ]


def tool_texts(agent: Agent) -> dict[str, tuple[str, bool]]:
    out = {}
    for e in agent.session.events:
        if e.type == "tool/result":
            block = e.data["message"]["content"][0]
            out[block["toolCallId"]] = (block["content"][0]["text"], block["isError"])
    return out


async def close(parent: Agent, store: EventStore) -> None:
    tool = parent.tools.get("subagent")
    assert isinstance(tool, SubagentTool)
    await tool.children.aclose()
    await parent.aclose()
    await parent.model.aclose()
    for summary in await store.list_sessions():
        check_log_invariants((await store.load(summary.header.id)).events)
    await store.close()


async def test_two_background_and_one_foreground_child_run_concurrently(tmp_path: Path) -> None:
    """All three children's first model requests are in flight at once (the server holds each
    until three are): the foreground child runs while both background ones still do."""
    children = {"TASK_A": "ALPHA", "TASK_B": "BETA", "TASK_C": "GAMMA"}

    def handler(req: RecordedRequest) -> Response:
        task = first_user(req)
        if task in children:
            return reply(children[task], gate=3)
        if not texts(req, "tool"):
            return call(
                ("c_a", "subagent", {"description": "a", "prompt": "TASK_A", "run_in_background": True}),
                ("c_b", "subagent", {"description": "b", "prompt": "TASK_B", "run_in_background": True}),
                ("c_c", "subagent", {"description": "c", "prompt": "TASK_C"}),
            )
        return reply("NOTED")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_parent(server, store, tmp_path)
        result = await parent.run_turn("delegate")
        await settle(parent)
        assert server.max_in_flight >= 3 and server.gate_timeouts == 0
        results = tool_texts(parent)
        ids = {call_id: STARTED.fullmatch(results[call_id][0]) for call_id in ("c_a", "c_b")}
        assert all(ids.values()), results
        assert results["c_c"] == ("GAMMA", False)
        assert result.ok
        got = sorted(notices(parent))
        want = sorted(
            [
                f"Background subagent {m.group(1)} finished and will do no further work unless you "
                "send it more.",
                "Its closing message:",
                answer,
            ]
            for m, answer in ((ids["c_a"], "ALPHA"), (ids["c_b"], "BETA"))
            if m is not None
        )
        assert got == want
        rows = {s.header.id: s for s in await store.children(parent.id)}
        assert len(rows) == 3
        for m in ids.values():
            assert m is not None
            loaded = await store.load(m.group(1))
            descriptor = next(e for e in loaded.events if e.type == "subagent/descriptor")
            assert descriptor.seq == 0 and descriptor.data["mode"] == "continuable"
            assert list(descriptor.data) == ["mode", "provider", "label", "delegation"]
            assert loaded.header.parent_session == parent.id and loaded.header.delegation_depth == 1
        await close(parent, store)


UNKNOWN = "22222222-2222-4222-8222-222222222222"


async def test_send_message_to_a_running_and_to_a_finished_child(tmp_path: Path) -> None:
    release = asyncio.Event()
    child_id: list[str] = []
    sent = 0

    async def handler(req: RecordedRequest) -> Response:
        nonlocal sent
        last = req.messages[-1]
        text = str(last.get("content"))
        if first_user(req) == "TASK_X":
            if text == "TASK_X":
                await release.wait()  # the child is running while the parent messages it
                return reply("X1")
            return reply({"FOLLOW_1": "X2", "FOLLOW_2": "X3"}[text])
        if last.get("role") == "tool":
            if text.startswith("started subagent"):
                child_id.extend(started_ids(req))
                return call(("s1", "send_message", {"subagent_id": child_id[0], "message": "FOLLOW_1"}))
            sent += 1
            release.set()
            return reply(f"SENT{sent}")
        if text == "start":
            return call(
                ("c_x", "subagent", {"description": "x", "prompt": "TASK_X", "run_in_background": True})
            )
        if text == "again":
            return call(("s2", "send_message", {"subagent_id": child_id[0], "message": "FOLLOW_2"}))
        if text == "unknown":
            return call(("s3", "send_message", {"subagent_id": UNKNOWN, "message": "hello"}))
        return reply("NOTED")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_parent(server, store, tmp_path)
        assert (await parent.run_turn("start")).ok
        await settle(parent)
        (cid,) = child_id
        queued = f"message queued as the next turn for subagent {cid}"
        assert tool_texts(parent)["s1"] == (queued, False)
        done = f"Background subagent {cid} finished and will do no further work unless you send it more."
        assert notices(parent) == [[done, "Its closing message:", "X2"]]  # one activation: X1, then X2

        assert (await parent.run_turn("again")).ok  # the child is idle now: it gets a new turn
        await settle(parent)
        assert tool_texts(parent)["s2"] == (queued, False)
        assert notices(parent)[1:] == [[done, "Its closing message:", "X3"]]

        assert (await parent.run_turn("unknown")).ok
        assert tool_texts(parent)["s3"] == (f'Error: subagent "{UNKNOWN}" is unavailable', True)
        result = next(e for e in parent.session.events if e.type == "tool/result" and e.data.get("error"))
        assert result.data["error"]["code"] == "NOT_RESUMABLE"

        child = await store.load(cid)
        relays = [e.data for e in child.events if e.type == "user/message"]
        assert [m["content"][0]["text"] for m in relays] == ["TASK_X", "FOLLOW_1", "FOLLOW_2"]
        assert [m["source"] for m in relays[1:]] == [
            {"kind": "coordinator", "form": "relay", "senderSessionId": parent.id}
        ] * 2
        assert [e.data["turn"] for e in child.events if e.type == "turn/end"] == [1, 2, 3]
        await close(parent, store)


async def test_interrupt_stops_the_childs_turn_and_the_parent_is_told(tmp_path: Path) -> None:
    child_asked = asyncio.Event()
    from dsh.testing.wire import Stall

    async def handler(req: RecordedRequest) -> Response:
        last = req.messages[-1]
        text = str(last.get("content"))
        if first_user(req) == "TASK_Y":
            child_asked.set()
            return Response(steps=(Stall(None),))
        if last.get("role") == "tool":
            if text.startswith("started subagent"):
                await child_asked.wait()  # the child's turn is running
                (cid,) = started_ids(req)
                return call(("i1", "interrupt_agent", {"agent_id": cid}))
            return reply("STOPPED")
        if text == "start":
            return call(
                ("c_y", "subagent", {"description": "y", "prompt": "TASK_Y", "run_in_background": True})
            )
        return reply("NOTED")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_parent(server, store, tmp_path)
        assert (await parent.run_turn("start")).ok
        await settle(parent)
        (row,) = await store.children(parent.id)
        cid = row.header.id
        assert tool_texts(parent)["i1"] == (f"interrupt requested for agent {cid}", False)
        assert notices(parent) == [
            [f"Background subagent {cid} was stopped before it finished.", "It left no closing message."]
        ]
        child = await store.load(cid)
        (end,) = [e.data for e in child.events if e.type == "turn/end"]
        assert end["reason"]["kind"] == "aborted"
        await close(parent, store)


async def test_only_the_direct_parent_may_message_a_child(tmp_path: Path) -> None:
    """Another agent sharing the same tool set (and so the same live children) is refused."""
    child_id: list[str] = []

    def handler(req: RecordedRequest) -> Response:
        last = req.messages[-1]
        text = str(last.get("content"))
        if first_user(req) == "TASK_Z":
            return reply("Z1")
        if last.get("role") == "tool":
            child_id.extend(started_ids(req))
            return reply("DONE")
        if text == "start":
            return call(
                ("c_z", "subagent", {"description": "z", "prompt": "TASK_Z", "run_in_background": True})
            )
        if text == "meddle":
            return call(("m1", "send_message", {"subagent_id": child_id[0], "message": "hi"}))
        return reply("NOTED")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_parent(server, store, tmp_path)
        other = await Agent.create(
            store, model=parent.model, tools=parent.tools, config=parent.config, cwd=tmp_path
        )
        assert (await parent.run_turn("start")).ok
        await settle(parent)
        assert (await other.run_turn("meddle")).ok
        assert tool_texts(other)["m1"] == (f'Error: subagent "{child_id[0]}" is unavailable', True)
        await other.aclose()
        await close(parent, store)


def background_fork_tools() -> ToolRegistry:
    """The standard set with a ``subagent_fork`` that may run in the background (same children)."""
    registry = builtin_registry()
    tools = subagent_tools()
    spawn = tools[0]
    assert isinstance(spawn, SubagentTool)
    for tool in tools:
        if tool.name == "subagent_fork":
            tool = ForkTool(background=True, children=spawn.children)
        registry.register(tool)
    return registry


async def test_a_background_fork_child_inherits_the_completed_turns_and_settles(tmp_path: Path) -> None:
    """``subagent_fork`` with ``run_in_background``: the id at once, the child sees the parent's
    completed turn (its cut persisted), and its closing message reaches the parent as a notice."""

    def handler(req: RecordedRequest) -> Response:
        users = texts(req, "user")
        if users == ["REMEMBER 42"]:
            return reply("NOTED 42")
        if users[-1] == "FORK TASK":  # the child: the completed turn 1 (not turn 2, still open), its task
            assert users == ["REMEMBER 42", "FORK TASK"] and texts(req, "assistant")[0] == "NOTED 42", users
            return reply("THE NUMBER IS 42")
        if not texts(req, "tool"):
            args = {"description": "recall", "prompt": "FORK TASK", "run_in_background": True}
            return call(("c_f", "subagent_fork", args))
        return reply("FORK STARTED")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        parent = await Agent.create(
            store,
            model=model,
            tools=background_fork_tools(),
            config=AgentConfig(model="m", retry=NO_DELAY),
            cwd=tmp_path,
        )
        assert (await parent.run_turn("REMEMBER 42")).ok
        assert (await parent.run_turn("fork it")).ok
        await settle(parent)
        started = STARTED.fullmatch(tool_texts(parent)["c_f"][0])
        assert started is not None, tool_texts(parent)
        child_id = started.group(1)
        assert notices(parent) == [
            [
                f"Background subagent {child_id} finished and will do no further work unless you "
                "send it more.",
                "Its closing message:",
                "THE NUMBER IS 42",
            ]
        ]
        loaded = await store.load(child_id)
        assert loaded.header.is_seeded and loaded.header.parent_session == parent.id
        inherited = loaded.events[: loaded.inherited_event_count]
        assert [e.type for e in inherited].count("turn/end") == 1, "only the completed turn 1 is inherited"
        own = [e for e in loaded.events[loaded.inherited_event_count :] if e.type == "subagent/descriptor"]
        assert own and own[0].data["mode"] == "continuable" and own[0].data["provider"] == "fork"
        await close(parent, store)


async def test_list_agents_reports_a_settled_child_ready_as_the_original_does(tmp_path: Path) -> None:
    """A background child whose activation settled (its notice sent) is ``[ready]`` — the
    original's word for a child with nothing to do (``subagent-list-agents``), not ``[idle]``;
    the same child with work again is ``[running]``."""

    def handler(req: RecordedRequest) -> Response:
        if first_user(req) == "TASK":
            # the child's second answer waits for the parent's request after its list_agents
            return reply("CHILD_OK") if len(texts(req, "user")) == 1 else reply("AGAIN", gate=2)
        asked = texts(req, "user")[-1]
        tools = texts(req, "tool")
        if asked == "delegate" and not tools:
            return call(("c1", "subagent", {"description": "k", "prompt": "TASK", "run_in_background": True}))
        if asked == "list" and len(tools) == 1:
            return call(("c2", "list_agents", {}))
        if asked == "again" and len(tools) == 2:  # the child is busy until this turn's next request
            child = started_ids(req)[0]
            return call(
                ("c3", "send_message", {"subagent_id": child, "message": "once more"}),
                ("c4", "list_agents", {}),
            )
        return reply("NOTED", gate=2) if asked == "again" else reply("NOTED")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        parent = await make_parent(server, store, tmp_path)
        assert (await parent.run_turn("delegate")).ok
        await settle(parent)
        assert (await parent.run_turn("list")).ok
        listed = tool_texts(parent)["c2"][0]
        assert listed.endswith(" [ready] \u2014 k"), listed
        assert (await parent.run_turn("again")).ok
        assert " [running] \u2014 k" in tool_texts(parent)["c4"][0]
        await settle(parent)
        assert server.gate_timeouts == 0
        await close(parent, store)


async def test_a_notice_that_arrives_after_the_parents_turn_ended_opens_a_turn_of_its_own(
    tmp_path: Path,
) -> None:
    """The parent's turn has logged its ``turn/end`` but still holds its lock (its title model
    answers late): a child's settlement arriving then is queued ``next-turn`` and opens a woken
    turn, as the original delivers it to an idle parent — never ``next-step`` (no step is left
    to claim it; the next prompted turn would swallow it, so where it lands would depend on
    the machine's speed)."""
    parent_box: list[Agent] = []

    def ended() -> bool:
        return bool(parent_box) and any(e.type == "turn/end" for e in parent_box[0].session.events)

    def queued() -> bool:
        return bool(parent_box) and any(
            e.type == "agent/inbox/spliced" and e.data.get("inserted")
            for e in parent_box[0].session.events[3:]
        )

    async def until(check: Any) -> None:
        for _ in range(1200):
            if check():
                return
            await asyncio.sleep(0.025)

    async def handler(req: RecordedRequest) -> Response:
        if "Create a concise title" in str(req.json.get("messages", [{}])[0].get("content")):
            await until(queued)  # the title comes once the child's notice is in the parent's inbox
            return reply("A title")
        if first_user(req) == "TASK":
            await until(ended)  # the child answers once the parent's turn has ended
            return reply("CHILD_OK")
        if "finished and will do no further work" in req.text():
            return reply("SEEN")
        if not texts(req, "tool"):
            return call(("c1", "subagent", {"description": "k", "prompt": "TASK", "run_in_background": True}))
        return reply("STARTED")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        config = AgentConfig(model="m", retry=NO_DELAY, title_model=model)
        parent = await Agent.create(store, model=model, tools=standard_tools(), config=config, cwd=tmp_path)
        parent_box.append(parent)
        assert (await parent.run_turn("delegate")).ok
        await settle(parent)
        await parent.until_idle()
        spliced = [
            e.data
            for e in parent.session.events
            if e.type == "agent/inbox/spliced" and e.data.get("inserted")
        ]
        assert [d["target"] for d in spliced] == ["next-turn"], spliced
        starts = [e.seq for e in parent.session.events if e.type == "turn/start"]
        assert len(starts) == 2  # the notice's own woken turn
        await close(parent, store)

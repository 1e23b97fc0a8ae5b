"""Issue 18's acceptance example, as written, inside ``asyncio.run`` against the local test server."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from dsh.subagents import standard_tools
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import WireToolCall, stream_reply

STANDARD = sorted([*standard_tools().names(), "get_weather"])


def _example(url: str, key: str) -> dict[str, Any]:
    """The issue's example verbatim (only wrapped in a function and asyncio.run)."""
    from dsh import Agent, OpenAICompatModel, open_store, tool

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return f"{city}: 3C"

    async def main() -> dict[str, Any]:
        store = open_store("sqlite:sessions.db")
        model = OpenAICompatModel(base_url=url, api_key=key, model="deepseek-chat")
        agent = await Agent.create(store, model=model, tools=[get_weather], cwd=".")
        result = await agent.run_turn("What is the weather in Oslo?")  # result.text, result.usage
        child = await agent.fork()  # inherits the completed turns, cut persisted
        await child.run_turn("Repeat the temperature.")
        loaded = await store.load(agent.id)  # loaded.own_events, typed messages
        stored_child = await store.load(child.id)
        await store.close()
        await model.aclose()
        return {"result": result, "loaded": loaded, "child": stored_child, "parent_len": len(loaded.events)}

    return asyncio.run(main())


def test_the_issue_example_runs_as_written(tmp_path: Path) -> None:
    call = WireToolCall.split("c1", "get_weather", json.dumps({"city": "Oslo"}), 2)
    server = OpenAICompatServer(
        [
            stream_reply(tool_calls=[call]),
            stream_reply(text=["It is ", "3C in Oslo."]),
            stream_reply(text="3C."),
        ]
    )
    server.start_in_thread()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        out = _example(server.base_url, "sk-test")
    finally:
        os.chdir(cwd)
        server.stop_thread()
    result, loaded, child = out["result"], out["loaded"], out["child"]
    assert result.ok and result.text == "It is 3C in Oslo."
    assert result.usage["outputTokens"] > 0
    first = server.requests[0].json
    assert first["model"] == "deepseek-chat"  # the name given once, to the model
    assert sorted(t["function"]["name"] for t in first["tools"]) == STANDARD
    assert {"read", "bash", "subagent", "subagent_fork"} <= set(STANDARD)
    weather = next(t for t in first["tools"] if t["function"]["name"] == "get_weather")
    assert weather["function"]["description"] == "Current weather in a city."
    assert weather["function"]["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    second = server.requests[1].messages
    assert second[-1]["role"] == "tool" and second[-1]["content"] == "Oslo: 3C"
    # the fork child: the parent's whole completed turn, then the marker; the cut persisted
    assert child.inherited_event_count == out["parent_len"]
    assert child.header.is_seeded and child.header.parent_session == loaded.header.id
    assert [e.type for e in child.events[: child.inherited_event_count]] == [e.type for e in loaded.events]
    assert child.events[child.inherited_event_count].type == "session/end-seed"
    # the child's request saw the inherited turn, then its own prompt
    third = server.requests[2].messages
    assert [m["role"] for m in third[-4:]] == ["assistant", "tool", "assistant", "user"]
    assert third[-1]["content"] == "Repeat the temperature."
    assert loaded.own_events == loaded.events  # a top-level session inherits nothing
    assert child.own_events == child.events[child.inherited_event_count :]
    assert child.own_events[0].type == "session/end-seed"
    assert (tmp_path / "sessions.db").exists()

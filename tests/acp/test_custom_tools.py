"""A server's own tools over real ACP stdio: each ``tool_call`` shows the tool's kind and title.

The server is a script serving ``Runtime(tools=...)`` with a ``@tool`` function and a
``Tool[A]`` subclass; a live prompt and a ``session/load`` of the same store both show what
the tools declare (not ``other`` and the bare name).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.acp.wire import RawServer

SERVER = '''
import asyncio, sys
from collections.abc import Mapping
from typing import Any
from dsh import ScriptedModel, Tool, ToolArgs, ToolContext, ToolOutput, open_store, standard_tools, tool
from dsh.acp import LiveModels, Runtime, serve_stdio
from dsh.model.scripted import Call, text_reply, tool_calls_reply

@tool(kind="fetch", title="Weather report")
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"{city}: 3C"

class PageArgs(ToolArgs):
    url: str

class Fetch(Tool[PageArgs]):
    name = "fetch_page"
    description = "Fetch a web page."
    args_model = PageArgs
    acp_kind = "fetch"

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        url = args.get("url")
        return f"Fetch {url}" if isinstance(url, str) else None

    async def call(self, args: PageArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput.text(f"<html>{args.url}</html>")

def tools():
    registry = standard_tools()
    registry.register(get_weather)
    registry.register(Fetch())
    return registry

calls = [Call("c1", "get_weather", {"city": "Oslo"}), Call("c2", "fetch_page", {"url": "https://example.org/a"})]
model = ScriptedModel([tool_calls_reply(calls), text_reply("done")], model="m")
runtime = Runtime(store=open_store(sys.argv[1]), models=LiveModels(model), model_name="m", tools=tools)
asyncio.run(serve_stdio(runtime))
'''


def starts(frames: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    out = []
    for frame in frames:
        update = frame.get("params", {}).get("update", {})
        if frame.get("method") == "session/update" and update.get("sessionUpdate") == "tool_call":
            out.append((update["toolCallId"], update["kind"], update["title"], update["status"]))
    return out


async def test_custom_tools_show_their_kind_and_title_live_and_on_load(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    store = f"sqlite:{tmp_path / 's.db'}"
    command = [sys.executable, "-c", SERVER]
    async with RawServer([store], stderr_path=tmp_path / "stderr", command=command) as server:
        await server.call("initialize", {"protocolVersion": 1})
        new = await server.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        prompt = [{"type": "text", "text": "Weather in Oslo?"}]
        reply = await server.call("session/prompt", {"sessionId": session_id, "prompt": prompt})
        assert reply["result"]["stopReason"] == "end_turn"
        live = starts(server.frames)
        await server.call("session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []})
        loaded = starts(server.frames)[len(live) :]
        assert await server.close() == 0
    assert live == [
        ("c1", "fetch", "Weather report", "in_progress"),
        ("c2", "fetch", "Fetch https://example.org/a", "in_progress"),
    ]
    assert loaded == [
        ("c1", "fetch", "Weather report", "pending"),
        ("c2", "fetch", "Fetch https://example.org/a", "pending"),
    ]

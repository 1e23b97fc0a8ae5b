"""An ACP client's ``session/new`` ``mcpServers`` reach the session: dsh advertises
``mcpCapabilities`` (http, sse), and the stdio server the client names is started at the first
prompt and called; its result reaches the client's ``tool_call_update``."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.acp.wire import RawServer

from .conftest import CALC

SERVER = """
import asyncio, sys
from dsh import ScriptedModel, open_store, standard_tools
from dsh.acp import LiveModels, Runtime, serve_stdio
from dsh.model.scripted import Call, text_reply, tool_calls_reply

calls = [Call("c1", "mcp__calc__add", {"a": 2, "b": 3})]
model = ScriptedModel([tool_calls_reply(calls), text_reply("done")], model="m")
store = open_store(sys.argv[1])
runtime = Runtime(store=store, models=LiveModels(model), model_name="m", tools=standard_tools)
asyncio.run(serve_stdio(runtime))
"""


async def test_session_new_mcp_servers_are_started_and_called(tmp_path: Path) -> None:
    cwd, calls = tmp_path / "work", tmp_path / "calls.txt"
    cwd.mkdir()
    store = f"sqlite:{tmp_path / 's.db'}"
    calc = {
        "name": "calc",
        "command": sys.executable,
        "args": [str(CALC)],
        "env": [{"name": "CALC_CALLS", "value": str(calls)}],
    }
    command = [sys.executable, "-c", SERVER]
    async with RawServer([store], stderr_path=tmp_path / "stderr", command=command) as server:
        init = await server.call("initialize", {"protocolVersion": 1})
        assert init["result"]["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True}
        new = await server.call("session/new", {"cwd": str(cwd), "mcpServers": [calc]})
        session_id = new["result"]["sessionId"]
        assert not calls.exists(), "nothing is called before a prompt"
        prompt = [{"type": "text", "text": "add 2 and 3"}]
        reply = await server.call("session/prompt", {"sessionId": session_id, "prompt": prompt})
        assert reply["result"]["stopReason"] == "end_turn", reply
        frames = list(server.frames)
        assert await server.close() == 0
    assert calls.read_text() == "2+3\n", "the client's server was called once"
    updates = [f["params"]["update"] for f in frames if f.get("method") == "session/update"]
    done = [
        u for u in updates if u.get("sessionUpdate") == "tool_call_update" and u.get("status") == "completed"
    ]
    (finished,) = [u for u in done if u["toolCallId"] == "c1"]
    assert finished["content"] == [{"type": "content", "content": {"type": "text", "text": "5"}}], finished
    (start,) = [u for u in updates if u.get("sessionUpdate") == "tool_call"]
    assert start["title"] == "calc: add"

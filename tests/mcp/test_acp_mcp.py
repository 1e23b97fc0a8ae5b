"""An ACP client's ``session/new`` ``mcpServers`` reach the session: dsh advertises
``mcpCapabilities`` (http, sse), and the stdio server the client names is started at the first
prompt and called; its result reaches the client's ``tool_call_update``. A ``session/load`` in a
fresh ``dsh acp`` process with ``mcpServers`` gives the loaded session the client's server the same
way: the next prompt's model request offers its tool and the server answers the call. The
workspace's own ``.mcp.json`` is not started (nor asked about) in an ACP session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import WireToolCall, stream_reply
from tests.acp.wire import RawServer

from .conftest import CALC, KEY, calc_entry, write_config

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


def _acp_calc(calls: Path) -> dict[str, Any]:
    """The calc server as an ACP ``mcpServers`` stdio entry, counting its calls in ``calls``."""
    return {
        "name": "calc",
        "command": sys.executable,
        "args": [str(CALC)],
        "env": [{"name": "CALC_CALLS", "value": str(calls)}],
    }


def _updates(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f["params"]["update"] for f in frames if f.get("method") == "session/update"]


def _finished(updates: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    """The one ``completed`` ``tool_call_update`` of ``call_id``."""
    (finished,) = [
        u
        for u in updates
        if u.get("sessionUpdate") == "tool_call_update"
        and u.get("status") == "completed"
        and u["toolCallId"] == call_id
    ]
    return finished


async def test_session_new_mcp_servers_are_started_and_called(tmp_path: Path) -> None:
    cwd, calls, starts = tmp_path / "work", tmp_path / "calls.txt", tmp_path / "workspace-starts.txt"
    cwd.mkdir()  # its own .mcp.json is not the client's: never started, never asked about
    write_config(cwd / ".mcp.json", mine=calc_entry(CALC, starts=starts))
    store = f"sqlite:{tmp_path / 's.db'}"
    calc = _acp_calc(calls)
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
    assert not starts.exists(), "an ACP session starts only the client's servers"
    assert "not starting" not in (tmp_path / "stderr").read_text()
    updates = _updates(frames)
    finished = _finished(updates, "c1")
    assert finished["content"] == [{"type": "content", "content": {"type": "text", "text": "5"}}], finished
    (start,) = [u for u in updates if u.get("sessionUpdate") == "tool_call"]
    assert start["title"] == "calc: add"


async def test_session_load_mcp_servers_are_offered_and_called_in_a_fresh_process(tmp_path: Path) -> None:
    cwd, calls = tmp_path / "work", tmp_path / "calls.txt"
    cwd.mkdir()
    add = WireToolCall.split("c1", "mcp__calc__add", '{"a": 2, "b": 3}')
    async with OpenAICompatServer() as model:
        model.enqueue(
            stream_reply(text="hi"), stream_reply(tool_calls=[add]), stream_reply(text="The sum is 5.")
        )
        args = ["--base-url", model.base_url, "--api-key", KEY, "--model", "m"]
        args += ["--store", f"sqlite:{tmp_path / 's.db'}"]
        async with RawServer(args, stderr_path=tmp_path / "stderr1") as first:
            await first.call("initialize", {"protocolVersion": 1})
            new = await first.call("session/new", {"cwd": str(cwd), "mcpServers": []})
            session_id = new["result"]["sessionId"]
            hello = [{"type": "text", "text": "hello"}]
            reply = await first.call("session/prompt", {"sessionId": session_id, "prompt": hello})
            assert reply["result"]["stopReason"] == "end_turn", reply
            assert await first.close() == 0
        async with RawServer(args, stderr_path=tmp_path / "stderr2") as second:
            await second.call("initialize", {"protocolVersion": 1})
            load = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": [_acp_calc(calls)]}
            loaded = await second.call("session/load", load)
            assert "error" not in loaded, loaded
            assert not calls.exists(), "nothing is called before a prompt"
            adding = [{"type": "text", "text": "add 2 and 3"}]
            reply = await second.call("session/prompt", {"sessionId": session_id, "prompt": adding})
            assert reply["result"]["stopReason"] == "end_turn", reply
            frames = list(second.frames)
            assert await second.close() == 0
        requests = [r.json for r in model.requests]
    offered = [{t["function"]["name"] for t in r.get("tools", [])} for r in requests]
    assert "mcp__calc__add" not in offered[0], "session/new named no server"
    assert "mcp__calc__add" in offered[1], "the loaded session offers the client's server's tool"
    assert [m["content"] for m in requests[1]["messages"] if m["role"] == "assistant"] == ["hi"], "loaded"
    assert calls.read_text() == "2+3\n", "the client's server was called once"
    (result,) = [m for m in requests[2]["messages"] if m["role"] == "tool"]
    assert result["tool_call_id"] == "c1" and result["content"] == "5"
    finished = _finished(_updates(frames), "c1")
    assert finished["content"] == [{"type": "content", "content": {"type": "text", "text": "5"}}], finished

"""``dsh mcp record DIR -- COMMAND`` / ``dsh mcp replay DIR`` driven by the SDK's own stdio
client: the proxy passes the exchange through and records it; the replay (no server) answers
the same session equally, refuses a changed call with a difference naming it, and reports
the recorded calls left unasked."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from mcp import ClientSession, McpError, StdioServerParameters

from .conftest import copy_calc


def _dsh(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "dsh.cli", *args])


async def _session(params: StdioServerParameters, b: int = 3) -> dict[str, Any]:
    """One client session: initialize, list the tools, call add(2, b)."""
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        added = await session.call_tool("add", {"a": 2, "b": b})
        return {
            "server": init.serverInfo.name,
            "tools": [t.model_dump() for t in tools.tools],
            "add": added.model_dump(),
        }


async def test_record_then_replay_answers_the_sdk_client_equally_and_refuses_a_changed_call(
    tmp_path: Path,
) -> None:
    recording, server = tmp_path / "rec", copy_calc(tmp_path / "servers")
    recorded = await _session(_dsh("mcp", "record", str(recording), "--", sys.executable, str(server)))
    assert recorded["server"] == "calc" and recorded["add"]["content"][0]["text"] == "5"
    assert "add" in [t["name"] for t in recorded["tools"]]
    server.unlink()  # no real server from here on

    report = tmp_path / "report.json"
    replayed = await _session(_dsh("mcp", "replay", str(recording), "--report", str(report)))
    assert replayed == recorded, "the replay answers as the server did"
    assert json.loads(report.read_text()) == {
        "served": ["initialize", "tools/list", 'tools/call add {"a":2,"b":3}'],
        "differed": [],
        "unconsumed": [],
    }

    changed = await _session(_dsh("mcp", "replay", str(recording), "--report", str(report)), b=4)
    assert changed["add"]["isError"] is True
    text = changed["add"]["content"][0]["text"]
    assert "tools/call differs from the recording" in text
    assert "params.arguments.b: recorded 3, live 4" in text
    assert json.loads(report.read_text())["unconsumed"] == ['tools/call add {"a":2,"b":3}']


async def test_replay_refuses_a_request_the_recording_lacks_with_a_json_rpc_error(tmp_path: Path) -> None:
    recording, server = tmp_path / "rec", copy_calc(tmp_path / "servers")
    await _session(_dsh("mcp", "record", str(recording), "--", sys.executable, str(server)))
    replay = stdio_client(_dsh("mcp", "replay", str(recording)))
    async with replay as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        with pytest.raises(McpError, match="prompts/list: no recorded request of this method left"):
            await session.list_prompts()


async def test_replay_serves_streamable_http_clients_too(tmp_path: Path) -> None:
    recording, server = tmp_path / "rec", copy_calc(tmp_path / "servers")
    recorded = await _session(_dsh("mcp", "record", str(recording), "--", sys.executable, str(server)))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "dsh.cli", "mcp", "replay", str(recording), "--http", str(port)]
    proc = subprocess.Popen([*argv, "--report", str(report)], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            added = await session.call_tool("add", {"a": 2, "b": 3})
        assert [t.model_dump() for t in tools.tools] == recorded["tools"]
        assert added.model_dump() == recorded["add"]
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    assert "3 request(s) served from the recording" in stderr
    assert json.loads(report.read_text())["unconsumed"] == []


TOKEN = "ghp_" + "M1c2p3R4e5c6o7r8d9S0e1c2r3e4t5T6o7k8"


async def _fail(params: StdioServerParameters, why: str) -> dict[str, Any]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return (await session.call_tool("fail", {"why": why})).model_dump()


async def test_a_recorded_exchange_holds_no_secret_and_replays_the_same_one(tmp_path: Path) -> None:
    """The recording is redacted (issue 31): a token in a call's arguments and in the server's
    answer is a placeholder on disk; the replay matches the same token live and refuses another."""
    recording, server = tmp_path / "rec", copy_calc(tmp_path / "servers")
    live = await _fail(_dsh("mcp", "record", str(recording), "--", sys.executable, str(server)), TOKEN)
    assert TOKEN in json.dumps(live), "the client itself gets the server's real answer"
    on_disk = "".join(p.read_text() for p in recording.iterdir())
    assert TOKEN not in on_disk and "<secret:github-token:" in on_disk
    assert json.loads((recording / "input.json").read_text())["replay"]["salt"]
    server.unlink()
    same = await _fail(_dsh("mcp", "replay", str(recording)), TOKEN)
    assert "differs from the recording" not in json.dumps(same)
    other = await _fail(_dsh("mcp", "replay", str(recording)), TOKEN[:-4] + "zzzz")
    assert "differs from the recording" in json.dumps(other) and TOKEN[:-4] not in json.dumps(other)

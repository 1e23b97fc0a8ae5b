"""Which calls a hostile stdio server's bad answer fails (``dsh.mcp.answers``), through a
session's servers: an answer naming a waiting call fails only that call; one that names no
waiting call fails every waiting call at once; a JSON log line is noise, not an answer.
Each call may take 20 s: a call that waited would end in "did not answer … within 20 s"."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import McpServerError
from dsh.mcp import StdioServer, open_servers
from dsh.mcp.complaints import Complaints
from dsh.mcp.servers import McpServers
from dsh.mcp.stdout import Lines
from dsh.tools import ToolContext, ToolOutput

from .conftest import SERVERS

MALFORMED = "mcp server 'hostile' sent a malformed answer to the call of 'echo': "


def hostile(tmp: Path, notices: list[str], *args: str) -> McpServers:
    env = {"HOSTILE_CALLS": str(tmp / "calls.txt")}
    spec = StdioServer("hostile", sys.executable, (str(SERVERS / "hostile.py"), *args), env, timeout=20)
    return open_servers([spec], "sess-1", tmp, None, notice=notices.append)


async def call(servers: McpServers, tmp: Path, **arguments: Any) -> ToolOutput:
    ctx = ToolContext(session_id="sess-1", call_id="c1", cwd=tmp)
    return await servers.call_tool("hostile", "echo", arguments, ctx)


async def arrived(tmp: Path, text: str) -> None:
    """Wait until the server has the call whose text is ``text`` (a hang guard of 20 s)."""
    calls = tmp / "calls.txt"
    async with asyncio.timeout(20):
        while not calls.exists() or text not in calls.read_text(encoding="utf-8").split():
            await asyncio.sleep(0.02)


async def test_an_answer_with_an_id_no_request_has_fails_every_waiting_call_at_once(tmp_path: Path) -> None:
    notices: list[str] = []
    servers = hostile(tmp_path, notices, "--answer", "wrong-id")
    try:
        await servers.tools()
        first = asyncio.create_task(call(servers, tmp_path, text="a", how="later"))
        await arrived(tmp_path, "a")
        second = call(servers, tmp_path, text="b")
        results = await asyncio.gather(first, second, return_exceptions=True)
    finally:
        await servers.aclose()
    assert all(isinstance(r, McpServerError) for r in results), results
    assert [str(r) for r in results] == [MALFORMED + "an answer with the id 1003 that no request has"] * 2
    assert notices == ["dsh: " + str(results[0])] * 2, notices


@pytest.mark.parametrize(
    ("how", "why"), [("non-object", "its result is not an object"), ("broken", "not JSON: '{")]
)
async def test_a_bad_answer_naming_a_waiting_call_fails_that_call_only(
    tmp_path: Path, how: str, why: str
) -> None:
    notices: list[str] = []
    servers = hostile(tmp_path, notices)
    try:
        await servers.tools()
        held = asyncio.create_task(call(servers, tmp_path, text="a", how="later"))
        await arrived(tmp_path, "a")
        with pytest.raises(McpServerError) as bad:
            await call(servers, tmp_path, text="b", how=how)
        answered = await held
        again = await call(servers, tmp_path, text="c")
    finally:
        await servers.aclose()
    assert str(bad.value).startswith(MALFORMED + why), bad.value
    assert [b["text"] for b in answered.content] == ["echo: a"], "the other call got its answer"
    assert [b["text"] for b in again.content] == ["echo: c"], "the server still serves"
    assert notices == ["dsh: " + str(bad.value)]


async def test_a_json_log_line_on_stdout_is_noise_said_once_not_an_answer(tmp_path: Path) -> None:
    notices: list[str] = []
    servers = hostile(tmp_path, notices, "--answer", "log")
    try:
        await servers.tools()
        outputs = [await call(servers, tmp_path, text=t) for t in ("a", "b", "c")]
    finally:
        await servers.aclose()
    assert [o.content[0]["text"] for o in outputs] == ["echo: a", "echo: b", "echo: c"]
    assert notices == [
        "dsh: mcp server 'hostile' wrote a line on stdout that is not a JSON-RPC message: "
        """'{"level": "info", "msg": "calling echo"}' (ignored; more are counted)""",
        "dsh: mcp server 'hostile': 2 more lines that are not messages (ignored)",
    ]


def test_complaints_say_each_kind_once_then_a_count_at_most_every_period() -> None:
    said: list[str] = []
    now = [0.0]
    complaints = Complaints("s", said.append, clock=lambda: now[0])
    for _ in range(1000):
        complaints("noise", "'junk'")
    complaints("stray", "id 7")
    now[0] = 31.0
    complaints("noise", "'junk'")
    complaints("noise", "'junk'")
    complaints.flush()
    assert said == [
        "dsh: mcp server 's' wrote a line on stdout that is not a JSON-RPC message: 'junk' "
        "(ignored; more are counted)",
        "dsh: mcp server 's' sent an answer no request is waiting for: id 7 (ignored; more are counted)",
        "dsh: mcp server 's': 1000 more lines that are not messages (ignored)",
        "dsh: mcp server 's': 1 more line that is not a message (ignored)",
    ]


def test_a_line_over_the_limit_is_dropped_as_it_comes() -> None:
    lines = Lines(limit=8)
    assert lines.feed(b"ok\n0123456789") == [b"ok"]
    assert lines.feed(b"0123456789" * 100) == []
    assert lines.feed(b"tail\nnext\npart") == [None, b"next"]
    assert lines.feed(b"ial\n") == [b"partial"]

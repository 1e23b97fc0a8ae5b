"""Real FastMCP servers behind a session's tools: results of every kind, a crash mid-call, a
hang past the timeout, a huge result spilled like bash's, a server that cannot start, the
environment rule, Streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dsh.mcp import HttpServer, McpServerSpec, StdioServer, open_servers, parse_config
from dsh.store.memory import MemoryEventStore
from dsh.tools import ToolContext, ToolLike, ToolOutput, ToolRegistry
from dsh.tools.sandbox import SandboxPolicy
from dsh.tools.spill import SpillPolicy
from tests.patience import patience

from .conftest import CALC


def calc(**extra: object) -> StdioServer:
    return StdioServer("calc", sys.executable, (str(CALC),), **extra)  # type: ignore[arg-type]


class Session:
    """A session's servers and a registry holding their tools (the agent's composition)."""

    def __init__(self, tmp: Path, specs: list[McpServerSpec], notices: list[str]) -> None:
        self.servers = open_servers(specs, "sess-1", tmp, None, notice=notices.append)
        self.tmp = tmp

    async def registry(self) -> ToolRegistry:
        return ToolRegistry(list[ToolLike](await self.servers.tools()), spill=SpillPolicy(self.tmp / "spill"))

    def ctx(self, **extra: object) -> ToolContext:
        return ToolContext(session_id="sess-1", call_id="c1", cwd=self.tmp, **extra)  # type: ignore[arg-type]


def text(out: ToolOutput) -> str:
    return "".join(str(b.get("text", "")) for b in out.content)


async def test_results_of_each_kind_become_tool_results(tmp_path: Path) -> None:
    notices: list[str] = []
    session = Session(tmp_path, [calc()], notices)
    try:
        registry = await session.registry()
        added = await registry.call("mcp__calc__add", '{"a": 2, "b": 3}', session.ctx())
        assert (text(added), added.is_error) == ("5", False)
        assert added.meta is not None and added.meta["mcp"]["tool"] == "add"
        failed = await registry.call("mcp__calc__fail", '{"why": "no way"}', session.ctx())
        assert failed.is_error and failed.code == "MCP_TOOL_ERROR" and "no way" in text(failed)
        stats = await registry.call("mcp__calc__stats", '{"values": [1, 2]}', session.ctx())
        assert stats.meta is not None and stats.meta["structuredContent"] == {"count": 2.0, "sum": 3.0}
        store = MemoryEventStore()
        picture = await registry.call(
            "mcp__calc__picture", "{}", session.ctx(attachments=store, image_input=True)
        )
        (block,) = picture.content
        assert block["type"] == "image" and block["attachment"]["mediaType"] == "image/png"
        assert await store.get_attachment(block["attachment"]["attachmentId"]) is not None
        refused = await registry.call("mcp__calc__add", '{"a": "two"}', session.ctx())
        assert refused.code == "INVALID_ARGUMENTS", "checked against the server's schema first"
        assert notices == []
    finally:
        await session.servers.aclose()


async def test_a_crash_mid_call_is_one_tool_error_and_the_next_call_restarts_it(tmp_path: Path) -> None:
    notices: list[str] = []
    session = Session(tmp_path, [calc()], notices)
    try:
        registry = await session.registry()
        crashed = await registry.call("mcp__calc__crash", "{}", session.ctx())
        assert crashed.is_error and crashed.code == "MCP_SERVER_ERROR"
        assert text(crashed) == (
            "Error: mcp server 'calc' exited during the call of 'crash' (stderr: calc: crashing on purpose)"
        )
        assert notices == ["dsh: " + text(crashed).removeprefix("Error: ")], "one line for the live view"
        again = await registry.call("mcp__calc__add", '{"a": 1, "b": 1}', session.ctx())
        assert text(again) == "2"
    finally:
        await session.servers.aclose()


async def test_a_hang_times_out_and_the_server_is_restarted(tmp_path: Path) -> None:
    notices: list[str] = []
    session = Session(tmp_path, [calc(timeout=1.0)], notices)
    try:
        registry = await session.registry()
        async with asyncio.timeout(patience(30)):  # a hang guard: the call's own 1 s timeout ends it
            hung = await registry.call("mcp__calc__hang", "{}", session.ctx())
        assert text(hung) == "Error: mcp server 'calc' did not answer 'hang' within 1 s"
        assert text(await registry.call("mcp__calc__add", '{"a": 1, "b": 2}', session.ctx())) == "3"
    finally:
        await session.servers.aclose()


async def test_a_huge_result_is_spilled_like_bashs(tmp_path: Path) -> None:
    session = Session(tmp_path, [calc()], [])
    try:
        registry = await session.registry()
        out = await registry.call("mcp__calc__huge", '{"n": 5000}', session.ctx())
        shown = text(out)
        assert len(shown.encode()) <= 800 and "Full formatted result stored at: " in shown
        path = Path(shown.split("Full formatted result stored at: ")[1].split(". Use read")[0])
        assert path.read_text().count("of a huge result") == 5000
        assert path.parent.parent == tmp_path / "spill"
    finally:
        await session.servers.aclose()


async def test_a_server_that_cannot_start_offers_no_tools_in_one_line(tmp_path: Path) -> None:
    notices: list[str] = []
    missing = StdioServer("gone", str(tmp_path / "no-such-server"))
    session = Session(tmp_path, [missing, calc()], notices)
    try:
        names = (await session.registry()).names()
        assert "mcp__calc__add" in names and not any(n.startswith("mcp__gone__") for n in names)
        (line,) = notices
        assert (
            line.startswith("dsh: mcp server 'gone' failed to start") and "its tools are not offered" in line
        )
    finally:
        await session.servers.aclose()


async def test_the_server_env_holds_no_secret_of_dsh_but_what_its_config_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTHER_API_KEY", "sk-other-secret-value")
    monkeypatch.setenv("PLAIN_SETTING", "plain")
    entry = {"command": sys.executable, "args": [str(CALC)], "env": {"NAMED_KEY": "${OTHER_API_KEY}"}}
    (spec,) = parse_config(json.dumps({"mcpServers": {"calc": entry}}), ".mcp.json")
    session = Session(tmp_path, [spec], [])
    try:
        registry = await session.registry()

        async def seen(name: str) -> str:
            return text(await registry.call("mcp__calc__secret", f'{{"name": "{name}"}}', session.ctx()))

        assert await seen("OTHER_API_KEY") == "", "a secret of dsh's is withheld"
        assert await seen("NAMED_KEY") == "sk-other-secret-value", "unless the config names it"
        assert await seen("PLAIN_SETTING") == "plain"
        assert await seen("DSH_SESSION_ID") == "sess-1"
    finally:
        await session.servers.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _served(transport: str) -> Iterator[int]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(CALC), transport, str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_an_http_or_sse_server(tmp_path: Path, transport: str) -> None:
    notices: list[str] = []
    with _served(transport) as port:
        url = f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
        await _call_web(tmp_path, HttpServer("web", url, "sse" if transport == "sse" else "http"), notices)


async def _call_web(tmp_path: Path, spec: HttpServer, notices: list[str]) -> None:
    session = Session(tmp_path, [spec], notices)
    try:
        registry = await session.registry()
        assert notices == []
        assert text(await registry.call("mcp__web__add", '{"a": 20, "b": 22}', session.ctx())) == "42"
    finally:
        await session.servers.aclose()


async def test_a_stdio_server_runs_under_the_sessions_sandbox_like_bash(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", Path.home() / f".dsh-mcp-sandbox-probe-{os.getpid()}"
    workspace.mkdir()
    servers = open_servers([calc()], "sess-1", workspace, SandboxPolicy(mode="workspace-write"))
    try:
        registry = ToolRegistry(list[ToolLike](await servers.tools()))
        ctx = ToolContext(session_id="sess-1", call_id="c1", cwd=workspace)
        inside = await registry.call("mcp__calc__touch", json.dumps({"path": str(workspace / "in.txt")}), ctx)
        assert text(inside) == "written" and (workspace / "in.txt").exists()
        denied = await registry.call("mcp__calc__touch", json.dumps({"path": str(outside)}), ctx)
        assert denied.is_error and not outside.exists(), "no write outside the workspace"
    finally:
        await servers.aclose()
        outside.unlink(missing_ok=True)

"""One MCP server of a session: started on first use, its tools listed, calls made, stopped.

The SDK's transports and ``ClientSession`` are anyio context managers that must be entered
and left by one task, so each connection has an owner task that opens them, reports the
tool list and then waits to be closed. A stdio server runs under the session's sandbox
policy exactly as ``bash`` does (``dsh.tools.sandbox.confine``: bubblewrap or Landlock,
the workspace-write fence, network off unless the policy allows it) with the tool
environment (``dsh.tools.environment``: dsh's secrets withheld) plus the ``env`` its config
names. Its stderr goes to a temporary file; the last line of it explains a death; its stdout
is read by dsh's own reader (:mod:`dsh.mcp.stdio`: junk counted in a few lines, a malformed
answer failing its call at once). Every failure — the command missing, the handshake
failing, a hang past the timeout, the process dying mid-call, a malformed answer — is one
:class:`~dsh.errors.McpServerError`; a dead or hung server is stopped, and started again on
the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from dsh.errors import McpServerError, ToolError
from dsh.mcp.answers import MALFORMED_ANSWER
from dsh.mcp.complaints import Complaints, Notice
from dsh.mcp.config import HttpServer, McpServerSpec
from dsh.mcp.stdio import stdio_streams
from dsh.tools.environment import tool_environment
from dsh.tools.sandbox import SandboxPolicy, confine
from mcp import ClientSession, McpError
from mcp import types as mt

Streams = tuple[Any, Any]


@dataclass(frozen=True, slots=True)
class ServerPlace:
    """Where and for whom a session's servers run."""

    session_id: str
    workspace: Path
    sandbox: SandboxPolicy | None = None


def _why(exc: BaseException) -> str:
    """The innermost message of ``exc`` (an anyio task group wraps it in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpError):
        return exc.error.message
    if isinstance(exc, FileNotFoundError):
        return f"command not found ({exc.filename or exc})"
    return str(exc).strip() or type(exc).__name__


class McpConnection:
    """The session's connection to one server (``spec``), started by :meth:`tools` or :meth:`call`."""

    def __init__(self, spec: McpServerSpec, place: ServerPlace, notice: Notice | None = None) -> None:
        self.spec = spec
        self.place = place
        self.complaints = Complaints(spec.name, notice)
        """What the server sends wrong, in a few lines (kept across its restarts)."""
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._lock = asyncio.Lock()
        self._stderr: IO[str] | None = None
        self.listed: list[mt.Tool] = []

    @property
    def name(self) -> str:
        return self.spec.name

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            lines = [line.strip() for line in self._stderr.read().splitlines() if line.strip()]
            return lines[-1][:300] if lines else ""
        return ""

    def _error(self, what: str, exc: BaseException | None = None, *, stderr: bool = True) -> McpServerError:
        detail = f": {_why(exc)}" if exc is not None else ""
        tail = self._stderr_tail() if stderr else ""
        said = f" (stderr: {tail})" if tail else ""
        return McpServerError(f"mcp server {self.name!r} {what}{detail}{said}")

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Streams]:
        spec = self.spec
        if isinstance(spec, HttpServer):
            if spec.transport == "sse":
                async with sse_client(spec.url, headers=dict(spec.headers)) as (read, write):
                    yield read, write
            else:
                client = create_mcp_http_client(headers=dict(spec.headers))
                async with client, streamable_http_client(spec.url, http_client=client) as (read, write, _):
                    yield read, write
            return
        cwd = (self.place.workspace / spec.cwd) if spec.cwd else self.place.workspace
        argv = confine(self.place.sandbox, [spec.command, *spec.args], self.place.workspace, cwd)
        env = {**tool_environment(self.place.session_id), **spec.env}
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by _stop
        async with stdio_streams(argv, env, cwd, self._stderr, self.complaints) as (read, write):
            yield read, write

    async def _own(self, ready: asyncio.Future[None]) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                tools: list[mt.Tool] = []
                cursor: str | None = None
                while True:
                    page = await session.list_tools(cursor=cursor)
                    tools += page.tools
                    cursor = page.nextCursor
                    if not cursor:
                        break
                self.listed, self._session = tools, session
                ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._session = None

    async def start(self) -> None:
        """Start the server if it is not running (bounded by its startup timeout)."""
        async with self._lock:
            if self._session is not None and self._owner is not None and not self._owner.done():
                return
            await self._stop()
            self._closing = asyncio.Event()
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._owner = asyncio.create_task(self._own(ready), name=f"mcp server {self.name}")
            try:
                async with asyncio.timeout(self.spec.startup_timeout):
                    await asyncio.shield(ready)
            except TimeoutError:
                error = self._error(f"did not start within {self.spec.startup_timeout:g} s", stderr=False)
                await self._stop()
                raise error from None
            except ToolError:
                raise
            except Exception as exc:
                error = self._error("failed to start", exc)
                await self._stop()
                raise error from None

    async def call(self, tool: str, arguments: dict[str, Any]) -> mt.CallToolResult:
        """``tools/call`` (the server started first when it is not running)."""
        await self.start()
        session = self._session
        if session is None:
            raise self._error("is not running")
        timeout = timedelta(seconds=self.spec.timeout)
        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except McpError as exc:
            if exc.error.code == MALFORMED_ANSWER:  # said by dsh's reader (dsh.mcp.answers): no wait
                what = f"sent a malformed answer to the call of {tool!r}"
                raise self._error(what, exc, stderr=False) from None
            if exc.error.code == mt.CONNECTION_CLOSED:
                error = self._error(f"exited during the call of {tool!r}")
                await self._stop()
                raise error from None
            if (
                "timed out" in exc.error.message.lower()
            ):  # a hung server is stopped: the next call restarts it
                error = self._error(f"did not answer {tool!r} within {self.spec.timeout:g} s", stderr=False)
                await self._stop()
                raise error from None
            raise self._error(f"refused the call of {tool!r}", exc, stderr=False) from None
        except (OSError, EOFError, BaseExceptionGroup) as exc:
            error = self._error(f"failed during the call of {tool!r}", exc)
            await self._stop()
            raise error from None

    async def _stop(self) -> None:
        owner, self._owner = self._owner, None
        self._closing.set()
        if owner is not None and not owner.done():
            try:
                async with asyncio.timeout(5):
                    await asyncio.shield(owner)
            except (TimeoutError, Exception):
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()
            self._stderr = None

    async def aclose(self) -> None:
        """Stop the server (stdio: its stdin closed, then SIGTERM/SIGKILL by the SDK)."""
        async with self._lock:
            await self._stop()

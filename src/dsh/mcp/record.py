"""``dsh mcp record DIR -- COMMAND ARGS…``: a stdio MCP proxy that records the exchange.

Any MCP client launches it as its server. It starts ``COMMAND`` (the real server, with the
proxy's own environment and working directory: it is the client's server, not a tool of a
dsh session), passes every newline-delimited JSON-RPC message through unchanged in both
directions, and appends each one as an ``mcp/message`` event to a new session in the
JSONL store ``DIR`` (``dsh.mcp.exchange``) before forwarding it, its secrets redacted
(``dsh.redact``: the salt is kept in ``DIR/input.json``; the client gets the real bytes).
A line that is not a JSON object is forwarded but not recorded. The server's stderr is the
proxy's. The proxy ends when the client closes its stdin (the server's stdin is closed, it
gets 2 s, then SIGTERM) or when the server exits; its exit code is the server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from dsh.errors import UsageError
from dsh.events import Event, SessionHeader
from dsh.events.redaction import redact_event
from dsh.events.vocabulary import MCP_MESSAGE
from dsh.ids import new_session_id, now_ms
from dsh.jsonx import JSONDecodeError, loads
from dsh.mcp.exchange import Direction
from dsh.redact import Redactor
from dsh.redact.settings import keep_settings, settings_in
from dsh.store.base import EventStore
from dsh.store.url import open_store

LINE_LIMIT = 64 * 1024 * 1024


async def stdin_reader() -> asyncio.StreamReader:
    """This process's stdin as a stream."""
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    return reader


class Recorder:
    """Appends the messages of one recording, in the order they are passed."""

    def __init__(self, store: EventStore, session_id: str, redactor: Redactor) -> None:
        self.store, self.session_id, self.redactor = store, session_id, redactor
        self._seq = 0
        self._lock = asyncio.Lock()

    async def record(self, direction: Direction, line: bytes) -> None:
        try:
            message: Any = loads(line)
        except JSONDecodeError:
            return
        if not isinstance(message, dict):
            return
        async with self._lock:
            event = Event(MCP_MESSAGE, self._seq, now_ms(), {"direction": direction, "message": message})
            await self.store.append(self.session_id, [redact_event(event, self.redactor)])
            self._seq += 1


async def _pump(source: asyncio.StreamReader, write: Any, direction: Direction, recorder: Recorder) -> None:
    while line := await source.readline():
        if line.strip():
            await recorder.record(direction, line)
        await write(line)


async def record(directory: Path, argv: list[str]) -> int:
    """Proxy and record until the client or the server ends; the server's exit code."""
    if not argv:
        raise UsageError("dsh mcp record DIR -- COMMAND ARGS…: no COMMAND given")
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    kept, redactor = settings_in(directory).for_record()  # the secrets out of what is recorded
    await asyncio.to_thread(keep_settings, directory, kept)
    store = open_store(f"jsonl:{directory}")
    try:
        header = SessionHeader(id=new_session_id(), created_at=now_ms(), cwd=os.getcwd())
        await store.create(header)
        recorder = Recorder(store, header.id, redactor)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LINE_LIMIT
            )
        except OSError as exc:
            raise UsageError(f"dsh mcp record: cannot start {argv[0]}: {exc.strerror or exc}") from None
        assert proc.stdin is not None and proc.stdout is not None
        to_server = proc.stdin

        async def server_write(line: bytes) -> None:
            to_server.write(line)
            await to_server.drain()

        async def client_write(line: bytes) -> None:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

        client = asyncio.ensure_future(_pump(await stdin_reader(), server_write, "toServer", recorder))
        server = asyncio.ensure_future(_pump(proc.stdout, client_write, "toClient", recorder))
        await asyncio.wait([client, server], return_when=asyncio.FIRST_COMPLETED)
        if client.done():  # the client is gone: let the server finish what it was sending
            with contextlib.suppress(OSError):
                to_server.close()
            try:
                async with asyncio.timeout(2):
                    await server
            except TimeoutError:
                proc.terminate()
        client.cancel()
        with contextlib.suppress(BaseException):
            await client
        with contextlib.suppress(BaseException):
            await server
        return await proc.wait()
    finally:
        await store.close()

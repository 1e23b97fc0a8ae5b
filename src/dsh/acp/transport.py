"""The ACP wire: newline-delimited JSON-RPC on stdin/stdout, with the SDK's framing gaps closed.

The SDK's own stdio transport logs and drops a line that is not JSON, crashes its receive
loop on a line that is JSON but not an object, and writes ``"data": null`` into every
error without data. :class:`LineTransport` is a message-level transport for the SDK's
connection that instead answers such lines itself (``-32700`` parse error, ``-32600``
invalid request — with the line's ``id`` when it has a usable one, as ``{"id": 9}``
without ``method``, ``result`` or ``error`` does, else ``id: null``) and keeps serving,
omits a null ``data``, serializes writes so frames never interleave, and never lets a
write to a vanished client crash the server. A line nested deeper than :data:`MAX_DEPTH`
(``[[[[...``) is a parse error too: it would exhaust the recursion of the JSON parser, the
SDK's validation or our own encoder.
:func:`protected_stdio` moves the real stdout aside for the protocol and points
fds 1 and 2 at the log (or ``/dev/null``), so nothing but protocol frames reaches stdout
and nothing can block on an unread stderr pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from dsh import jsonx

log = logging.getLogger("dsh.acp")

STREAM_LIMIT = 50 * 1024 * 1024
"""The reader's line limit; longer lines are still reassembled (as the SDK does)."""

PARSE_ERROR = {"code": -32700, "message": "Parse error"}
INVALID_REQUEST = {"code": -32600, "message": "Invalid Request"}

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a frame may have (the frame itself is level 1)."""

TOO_DEEP = {**PARSE_ERROR, "data": f"the JSON is nested deeper than {MAX_DEPTH} levels"}

_ID_TYPES = (str, int, float, type(None))


class ByteSink(Protocol):
    """Where protocol frames go."""

    async def write(self, data: bytes) -> None:
        """Write ``data`` (whole frames) and return once it has been handed on."""
        ...

    def close(self) -> None:
        """Close the sink; errors while closing are swallowed."""
        ...


class PipeSink:
    """An asyncio pipe writer (pipes, sockets and character devices)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()


class FileSink:
    """A blocking file (a regular file cannot be an asyncio pipe); writes are small."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file

    async def write(self, data: bytes) -> None:
        self._file.write(data)
        self._file.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()


def _error_frame(error: dict[str, Any], request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": dict(error)}


class _TooDeepError(ValueError):
    """A line nested deeper than :data:`MAX_DEPTH`."""


def parse_line(line: bytes) -> Any:
    """Decode one frame; ``ValueError`` for a line that is not JSON or nests too deep.

    The stdlib parser recurses per level, so a line of brackets raises ``RecursionError``
    before it finds the JSON invalid; that, and any depth beyond :data:`MAX_DEPTH`, is
    :class:`_TooDeepError`. Counting brackets (in C) proves most lines shallow without a walk.
    """
    try:
        message = json.loads(line)
    except RecursionError:
        raise _TooDeepError(line[:200]) from None
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _deeper_than(message, MAX_DEPTH):
        raise _TooDeepError(line[:200])
    return message


def _deeper_than(value: Any, limit: int) -> bool:
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            item
            for container in level
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, dict | list)
        ]
    return False


def check_message(message: Any) -> dict[str, Any] | None:
    """The error frame to answer for a decoded line that is not a JSON-RPC message, else None."""
    if not isinstance(message, dict):
        return _error_frame(INVALID_REQUEST)
    request_id = message.get("id")
    if not isinstance(request_id, _ID_TYPES) or isinstance(request_id, bool):
        return _error_frame(INVALID_REQUEST)
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        return _error_frame(INVALID_REQUEST, request_id)
    if method is None and ("id" not in message or ("result" not in message and "error" not in message)):
        # Neither a request nor a response: answered, with its id when it has one (a
        # response that answers nothing is left to the SDK, which never replies to one).
        return _error_frame(INVALID_REQUEST, request_id)
    params = message.get("params")
    if method is not None and params is not None and not isinstance(params, dict | list):
        return _error_frame(INVALID_REQUEST, request_id)
    return None


def encode_frame(message: dict[str, Any]) -> bytes:
    """One compact JSON line; an error's ``data`` is left out when null."""
    error = message.get("error")
    if isinstance(error, dict) and "data" in error and error["data"] is None:
        message = {**message, "error": {k: v for k, v in error.items() if k != "data"}}
    return (jsonx.dumps_compact_text(message, ascii_only=True, lenient=True) + "\n").encode("utf-8")


class LineTransport:
    """The SDK ``Transport`` over a byte reader and a sink; see the module docstring."""

    def __init__(self, reader: asyncio.StreamReader, sink: ByteSink) -> None:
        self._reader = reader
        self._sink = sink
        self._lock = asyncio.Lock()
        self._broken = False
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        data = encode_frame(message)
        async with self._lock:
            if self._broken or self._closed:
                return
            try:
                await self._sink.write(data)
            except (OSError, RuntimeError, ConnectionError) as exc:
                self._broken = True
                log.warning("the client stopped reading stdout (%s); dropping further output", exc)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = parse_line(line)
            except _TooDeepError:
                log.warning(
                    "answered a line nested deeper than %d levels with a parse error: %.200r", MAX_DEPTH, line
                )
                await self.send(_error_frame(TOO_DEEP))
                continue
            except ValueError:
                log.warning("answered a line that is not JSON with a parse error: %.200r", line)
                await self.send(_error_frame(PARSE_ERROR))
                continue
            problem = check_message(message)
            if problem is not None:
                log.warning("answered an invalid JSON-RPC message: %.200r", line)
                await self.send(problem)
                continue
            assert isinstance(message, dict)
            return message

    async def close(self) -> None:
        if self._closed:
            return
        async with self._lock:
            self._closed = True
            self._sink.close()

    async def _read_line(self) -> bytes:
        parts: list[bytes] = []
        try:
            while True:
                try:
                    parts.append(await self._reader.readuntil(b"\n"))
                    return b"".join(parts)
                except asyncio.LimitOverrunError as exc:
                    parts.append(await self._reader.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            parts.append(exc.partial)
            return b"".join(parts)


def _feed_from_thread(
    loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, source: BinaryIO
) -> None:
    def pump() -> None:
        try:
            while True:
                data = source.readline()
                if not data:
                    break
                loop.call_soon_threadsafe(reader.feed_data, data)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="dsh-acp-stdin", daemon=True).start()


async def open_reader(source: BinaryIO) -> asyncio.StreamReader:
    """An asyncio reader over ``source`` (a pipe, or a thread feeding from a regular file)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), source)
    except ValueError:
        _feed_from_thread(loop, reader, source)
    return reader


async def open_sink(fd: int) -> ByteSink:
    """A sink writing to ``fd`` (asynchronously when it is a pipe)."""
    loop = asyncio.get_running_loop()
    target = os.fdopen(fd, "wb", buffering=0)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, target)
    except ValueError:
        return FileSink(target)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return PipeSink(writer)


@dataclass(frozen=True, slots=True)
class ProtocolFds:
    """The descriptors the protocol uses once stdio is protected."""

    stdin: BinaryIO
    stdout_fd: int


@contextlib.contextmanager
def protected_stdio(log_file: Path | None) -> Iterator[ProtocolFds]:
    """Keep the real stdout for the protocol only; fds 1 and 2 go to ``log_file`` or /dev/null.

    Anything printed by accident (``print``, a warning, a C library, a child process that
    inherits the descriptors) lands in the log instead of corrupting the protocol stream
    or filling a stderr pipe nobody reads. Restored on exit.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved_out, saved_err = os.dup(1), os.dup(2)
    protocol_out = os.dup(1)
    if log_file is not None:
        target = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    else:
        target = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
    finally:
        os.close(target)
    try:
        yield ProtocolFds(sys.stdin.buffer, protocol_out)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        os.close(saved_out)
        os.close(saved_err)

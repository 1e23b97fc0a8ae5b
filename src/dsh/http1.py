"""HTTP/1.1 on asyncio streams: the one home of the wire rules dsh's local servers share.

``dsh serve`` (keep-alive, JSON and SSE replies) and the scripted test server of
``dsh.testing`` (one scripted response per connection) both listen on 127.0.0.1 with a
:class:`Listener`, read each request with :func:`read_request` (a ``Content-Length`` or
chunked body; names of headers lower-cased; the query string dropped) and frame their
replies with :func:`head` and :func:`chunk`. No TLS, no pipelining, no ``Expect: 100``.

Input is untrusted and bounded (:class:`Limits`): a malformed request line, header,
``Content-Length`` or chunk size is a 400, a declared body over ``max_body`` a 413 before
any of the body is read, a head over ``max_head`` a 431, a head not finished (or a body
stalled) within ``timeout`` seconds a 408 — each raised as
:class:`~dsh.errors.HttpRequestError` for the server to answer and log in one line. A
connection idle for ``timeout`` before a request is closed without a word. The
:class:`Listener` accepts on its own loop: an ``accept()`` failure (out of file
descriptors: ``EMFILE``) is logged once and retried after a pause, never a traceback.
Its connections are counted per peer address (:class:`dsh.peer_slots.PeerSlots`): over a
peer's cap, or out of descriptors, the longest-idle connection — no request head yet (as
:func:`read_request` tells), or kept alive between requests — is closed to make room.
Stdlib only (and :mod:`dsh.errors`, :mod:`dsh.peer_slots`), so any layer may use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import re
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass

from dsh.errors import HttpRequestError
from dsh.peer_slots import PeerSlots, Slot

REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 402: "Payment Required",
           403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           409: "Conflict", 413: "Payload Too Large", 421: "Misdirected Request",
           422: "Unprocessable Entity", 429: "Too Many Requests",
           431: "Request Header Fields Too Large", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 529: "Site Overloaded"}  # fmt: skip
"""The reason phrases dsh's servers send (any other status says ``Status``)."""

LAST_CHUNK = b"0\r\n\r\n"
"""The end of a chunked body (no trailers)."""

ConnectionHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
Log = Callable[[str], None]

QUIET = (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.CancelledError)
"""What ends a connection without a word: the peer went away, sent garbage, or we closed."""

ACCEPT_RETRY = 0.5
"""Seconds between ``accept()`` attempts while it fails (out of file descriptors)."""
ACCEPT_LOG_EVERY = 60.0
"""While ``accept()`` keeps failing, at most one log line per this many seconds."""

_LENGTH = re.compile(r"[0-9]{1,18}")
_CHUNK_SIZE = re.compile(rb"[0-9a-fA-F]{1,15}")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds :func:`read_request` enforces."""

    max_body: int = 32 * 1024 * 1024
    """The largest body accepted (declared or chunked), in bytes."""
    max_head: int = 64 * 1024
    """The largest request line plus headers, in bytes."""
    timeout: float = 30.0
    """Seconds a connection may stay idle before a request, take to send a request's head,
    or stall while sending its body."""


DEFAULT_LIMITS = Limits()


@dataclass(slots=True)
class Request:
    """One request as read from the wire."""

    method: str
    path: str
    """The request target without its query string."""
    headers: dict[str, str]
    """Names lower-cased."""
    body: bytes
    query: str = ""
    """The query string (after ``?``, without it; ``""``: none)."""


async def read_request(reader: asyncio.StreamReader, limits: Limits = DEFAULT_LIMITS) -> Request | None:
    """The next request, or ``None`` when the peer closed (or stayed idle ``limits.timeout``) first.

    Raises :class:`~dsh.errors.HttpRequestError` for a request to refuse (400, 408, 413,
    431) and ``asyncio.IncompleteReadError`` when the peer breaks off mid-request. Read on a
    :class:`Listener`'s connection, the connection counts as idle (sheddable, see
    :class:`PeerSlots`) until the whole head has arrived.
    """
    slot = _SLOT.get()
    if slot is not None:
        slot.wait()
    try:
        async with asyncio.timeout(limits.timeout):
            first = await reader.read(1)
    except TimeoutError:
        return None
    if not first:
        return None
    try:
        async with asyncio.timeout(limits.timeout):
            head_bytes = first + await reader.readuntil(b"\r\n\r\n")
    except TimeoutError:
        raise HttpRequestError(
            408, f"the request head was not finished within {limits.timeout:g} s"
        ) from None
    except asyncio.LimitOverrunError:
        raise HttpRequestError(431, f"the request head is over {limits.max_head} bytes") from None
    except asyncio.IncompleteReadError:
        return None  # the peer closed mid-head: nothing to answer
    if slot is not None:
        slot.work()
    if len(head_bytes) > limits.max_head:
        raise HttpRequestError(431, f"the request head is over {limits.max_head} bytes")
    method, target, headers = _parse_head(head_bytes.lstrip(b"\r\n").decode("latin-1"))
    body = await _read_body(reader, headers, limits)
    path, _, query = target.partition("?")
    return Request(method, path, headers, body, query)


def _parse_head(text: str) -> tuple[str, str, dict[str, str]]:
    lines = text[: -len("\r\n\r\n")].split("\r\n")
    parts = lines[0].split(" ")
    if (
        len(parts) != 3
        or not _TOKEN.fullmatch(parts[0])
        or not parts[1]
        or not parts[2].startswith("HTTP/1.")
    ):
        raise HttpRequestError(400, f"malformed request line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.fullmatch(name):
            raise HttpRequestError(400, f"malformed header line {line[:80]!r}")
        name, value = name.lower(), value.strip()
        repeated = name in headers and name in ("host", "content-length", "transfer-encoding")
        if repeated and (name != "content-length" or headers[name] != value):
            raise HttpRequestError(400, f"more than one {name} header")
        headers[name] = value
    return parts[0], parts[1], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str], limits: Limits) -> bytes:
    encoding, length = headers.get("transfer-encoding"), headers.get("content-length")
    if encoding is not None:
        if length is not None:
            raise HttpRequestError(400, "both Content-Length and Transfer-Encoding")
        if encoding.lower() != "chunked":
            raise HttpRequestError(400, f"unsupported Transfer-Encoding {encoding[:40]!r}")
        return await _read_chunked(reader, limits)
    if length is None:
        return b""
    if not _LENGTH.fullmatch(length):
        raise HttpRequestError(400, f"bad Content-Length {length[:40]!r}")
    size = int(length)
    if size > limits.max_body:
        raise HttpRequestError(413, f"a body of {size} bytes is over the limit of {limits.max_body}")
    return await _read_exactly(reader, size, limits.timeout)


async def _read_exactly(reader: asyncio.StreamReader, size: int, stall: float) -> bytes:
    """``size`` bytes; a stall of ``stall`` seconds between two reads is a 408."""
    parts: list[bytes] = []
    remaining = size
    while remaining:
        try:
            async with asyncio.timeout(stall):
                data = await reader.read(min(remaining, 1 << 20))
        except TimeoutError:
            raise HttpRequestError(408, f"the request body stalled for {stall:g} s") from None
        if not data:
            raise asyncio.IncompleteReadError(b"".join(parts), size)
        parts.append(data)
        remaining -= len(data)
    return b"".join(parts)


async def _line(reader: asyncio.StreamReader, stall: float) -> bytes:
    try:
        async with asyncio.timeout(stall):
            return await reader.readuntil(b"\r\n")
    except TimeoutError:
        raise HttpRequestError(408, f"the request body stalled for {stall:g} s") from None
    except asyncio.LimitOverrunError:
        raise HttpRequestError(400, "a chunk-size line is too long") from None


async def _read_chunked(reader: asyncio.StreamReader, limits: Limits) -> bytes:
    body = bytearray()
    while True:
        line = (await _line(reader, limits.timeout))[:-2]
        size_text = line.split(b";")[0].strip()
        if not _CHUNK_SIZE.fullmatch(size_text):
            raise HttpRequestError(400, f"bad chunk size {line[:40]!r}")
        size = int(size_text, 16)
        if size == 0:
            while await _line(reader, limits.timeout) != b"\r\n":  # trailers, ignored
                pass
            return bytes(body)
        if len(body) + size > limits.max_body:
            raise HttpRequestError(413, f"a chunked body over the limit of {limits.max_body} bytes")
        body += await _read_exactly(reader, size, limits.timeout)
        if await _read_exactly(reader, 2, limits.timeout) != b"\r\n":
            raise HttpRequestError(400, "a chunk does not end with CRLF")


def reason(status: int) -> str:
    """The reason phrase for ``status``."""
    return REASONS.get(status, "Status")


def head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    """The status line and headers of a response, through the blank line."""
    lines = [f"HTTP/1.1 {status} {reason(status)}", *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    """``data`` framed as one chunk of a chunked body (empty ``data`` ends the body)."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def stderr_log(line: str) -> None:
    """The default log: one line on stderr."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def peer_of(writer: asyncio.StreamWriter) -> str:
    """``host:port`` of the connection's peer, for log lines."""
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "?"


def _nothing() -> None:
    return None


_SLOT: ContextVar[Slot | None] = ContextVar("dsh_http1_slot", default=None)
"""The slot of the :class:`Listener` connection a task serves (:func:`read_request` marks it)."""


class Listener:
    """Serves ``handler`` per connection on ``host:port`` (0: a free port) until :meth:`close`.

    Each connection runs as a task that :meth:`close` cancels; the handler's writer is closed
    when it returns, whatever happened. A handler's unexpected exception is one line on
    ``log`` (named by ``name``), never a traceback; so is a failing ``accept()``, which is
    retried every :data:`ACCEPT_RETRY` seconds (one line per :data:`ACCEPT_LOG_EVERY`), at
    once when closing the longest-idle connection freed a descriptor. ``peer_cap``: the most
    connections one peer address may hold (default
    :func:`~dsh.peer_slots.default_peer_cap`), the longest-idle one closed for a new one.
    """

    def __init__(
        self,
        handler: ConnectionHandler,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log: Log = stderr_log,
        name: str = "dsh",
        peer_cap: int | None = None,
    ) -> None:
        self._handler = handler
        self.host = host
        self._port = port
        self._log = log
        self._name = name
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._tasks: dict[asyncio.Task[None], Slot] = {}
        self._limit = 1 << 16
        self.peers = PeerSlots(peer_cap, log=log, name=name)
        """The open connections by peer address (``peer_cap``: the most one may hold)."""
        self.accept_failures = 0
        """How many ``accept()`` calls failed (out of file descriptors, ...)."""

    @property
    def started(self) -> bool:
        return self._sock is not None

    @property
    def port(self) -> int:
        assert self._sock is not None, "listener not started"
        return int(self._sock.getsockname()[1])

    async def start(self, *, limit: int = 1 << 16) -> None:
        """Bind and start accepting; ``limit`` bounds a request head (the stream's buffer limit)."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.create_server((self.host, self._port), family=family, backlog=128)
        sock.setblocking(False)
        self._sock, self._limit = sock, limit
        self._accepting = asyncio.get_running_loop().create_task(self._accept(sock))

    async def close(self) -> None:
        """Stop listening, cancel the connections still open and wait for them."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        accepting, self._accepting = self._accepting, None
        if accepting is not None:
            accepting.cancel()
            await asyncio.gather(accepting, return_exceptions=True)
        sock.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _accept(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        logged_at: float | None = None
        while True:
            try:
                conn, address = await loop.sock_accept(sock)
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError as exc:
                self.accept_failures += 1
                now = time.monotonic()
                if logged_at is None or now - logged_at >= ACCEPT_LOG_EVERY:
                    logged_at = now
                    self._log(f"{self._name}: cannot accept a connection ({exc.strerror or exc}); "
                              f"retrying every {ACCEPT_RETRY:g} s")  # fmt: skip
                if exc.errno in (errno.EMFILE, errno.ENFILE) and await self._free_a_descriptor():
                    continue
                await asyncio.sleep(ACCEPT_RETRY)
                continue
            peer = str(address[0]) if isinstance(address, tuple) and address else "?"
            slot = self.peers.open(peer, _nothing)
            if slot is None:  # the peer's connections are all busy: this one is refused
                conn.close()
                continue
            task = loop.create_task(self._connection(conn, slot))
            slot.close = task.cancel
            self._tasks[task] = slot
            task.add_done_callback(functools.partial(self._ended, conn))

    def _ended(self, conn: socket.socket, task: asyncio.Task[None]) -> None:
        if task.cancelled():  # shed or closed before its stream was open: nothing closed it
            conn.close()
        slot = self._tasks.pop(task, None)
        if slot is not None:
            self.peers.closed(slot)

    async def _free_a_descriptor(self) -> bool:
        """Out of descriptors: close the longest-idle connection and wait until it is closed."""
        slot = self.peers.shed_longest_idle()
        task = next((t for t, s in self._tasks.items() if s is slot), None)
        if task is None:
            return False
        await asyncio.wait([task], timeout=ACCEPT_RETRY)
        return True

    async def _connection(self, conn: socket.socket, slot: Slot) -> None:
        _SLOT.set(slot)
        try:
            reader, writer = await asyncio.open_connection(sock=conn, limit=self._limit)
        except OSError as exc:
            conn.close()
            self._log(f"{self._name}: a connection failed to open ({exc.strerror or exc})")
            return
        try:
            await self._handler(reader, writer)
        except QUIET:
            # close() cancels connections still open; a connection task must end quietly.
            pass
        except Exception as exc:  # a handler bug: one line, never a traceback
            self._log(f"{self._name}: connection from {peer_of(writer)} failed: {type(exc).__name__}: {exc}")
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
                await writer.wait_closed()

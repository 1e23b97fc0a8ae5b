"""The local OpenAI-compatible test server: real HTTP on 127.0.0.1, scripted per test.

``POST /v1/chat/completions`` (or ``/chat/completions``) plays a scripted
:class:`~dsh.testing.wire.Response`: the next one queued with :meth:`OpenAICompatServer.enqueue`,
or whatever the ``handler`` returns for the recorded request. Every request is recorded
(path, headers, parsed JSON body, start/end times) and the server tracks how many requests
are in flight at once, so a test can prove that two calls overlapped.

Use it as an async context manager inside a test's event loop, or as a plain context manager
that runs it on a background thread with its own loop (for a ``dsh`` subprocess). All waits
are bounded, so a broken test fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, assert_never

from dsh import jsonx
from dsh.errors import DshError
from dsh.events.vocabulary import RUNTIME_CONTEXT_PREFIX
from dsh.http1 import LAST_CHUNK, Listener, chunk, head, read_request
from dsh.testing.wire import (
    AwaitInFlight,
    Drop,
    Hold,
    Pause,
    Response,
    Stall,
    Write,
    http_error,
    json_response,
)

Handler = Callable[["RecordedRequest"], "Response | Awaitable[Response | None] | None"]
"""Called per request (on the server's loop); ``None`` falls back to the queue."""

RUNTIME_CONTEXT = RUNTIME_CONTEXT_PREFIX
"""How ``dsh.loop.runtime_context``'s snapshot (and its "none" text) begins."""

PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})


@dataclass(slots=True)
class RecordedRequest:
    """One request the server received."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes
    json: Any
    """The parsed JSON body, or ``None`` when it is not JSON."""
    started_at: float
    """``time.monotonic()`` when the request was read."""
    ended_at: float | None = None
    """``time.monotonic()`` when the response was finished (``None`` while in flight)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        body = self.json if isinstance(self.json, dict) else {}
        messages = body.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def prompt(self) -> str:
        """The last user message's text, leaving out dsh's runtime-context snapshot (which
        follows a prompt at a session's first step): what a scripted handler routes on."""
        for message in reversed(self.messages):
            text = str(message.get("content") or "") if isinstance(message, dict) else ""
            if message.get("role") == "user" and not text.startswith(RUNTIME_CONTEXT):
                return text
        return ""

    def text(self) -> str:
        """Every message's string content joined with newlines (handy for routing)."""
        return "\n".join(str(m.get("content") or "") for m in self.messages if isinstance(m, dict))


class OpenAICompatServer:
    """A scripted Chat Completions streaming server on ``127.0.0.1``.

    ``responses`` are served first-in first-out; ``handler`` (sync or async) is asked first
    and may return ``None`` to use the queue. With neither, the server answers 500 with a
    JSON error that says it ran out of script.
    """

    def __init__(
        self,
        responses: Iterable[Response] = (),
        *,
        handler: Handler | None = None,
        port: int = 0,
        read_timeout: float = 10.0,
        gate_timeout: float = 10.0,
        max_stall: float = 30.0,
    ) -> None:
        self.handler = handler
        self._queue: deque[Response] = deque(responses)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._read_timeout = read_timeout
        self._gate_timeout = gate_timeout
        self._max_stall = max_stall
        self._in_flight = 0
        self._max_in_flight = 0
        self._gate_timeouts = 0
        self._listener = Listener(self._serve, port=port)
        self._changed: asyncio.Condition | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    # -- scripting and inspection (thread-safe) -------------------------------------------

    def enqueue(self, *responses: Response) -> None:
        """Queue responses to serve in order."""
        with self._lock:
            self._queue.extend(responses)

    @property
    def pending(self) -> int:
        """Queued responses not served yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[Any]:
        """The parsed JSON body of every request so far."""
        return [r.json for r in self.requests]

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests that were being served at the same moment."""
        with self._lock:
            return self._max_in_flight

    @property
    def gate_timeouts(self) -> int:
        """How many :class:`AwaitInFlight` gates gave up waiting (a test should see 0)."""
        with self._lock:
            return self._gate_timeouts

    @property
    def port(self) -> int:
        if not self._listener.started:
            raise DshError("test server is not running: use 'async with' or 'with' first")
        return self._listener.port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (what an OpenAI client takes as ``base_url``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle on the caller's loop ---------------------------------------------------

    async def start(self) -> None:
        self._changed = asyncio.Condition()
        await self._listener.start()

    async def close(self) -> None:
        """Stop listening, cancel responses still being played and wait for them."""
        await self._listener.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- lifecycle on a background thread -------------------------------------------------

    def start_in_thread(self, timeout: float = 10.0) -> None:
        """Run the server on a new thread with its own event loop."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="dsh-test-server", daemon=True)
        thread.start()
        self._thread, self._thread_loop = thread, loop
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout)
        except BaseException:
            self.stop_thread(timeout)
            raise

    def stop_thread(self, timeout: float = 10.0) -> None:
        """Stop a server started with :meth:`start_in_thread` and join its thread."""
        loop, thread = self._thread_loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.close(), loop).result(timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if not thread.is_alive():
                loop.close()
            self._thread = self._thread_loop = None

    def __enter__(self) -> Self:
        self.start_in_thread()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_thread()

    # -- serving --------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: one request, one scripted response (the listener closes it)."""
        with contextlib.suppress(TimeoutError):
            request = await asyncio.wait_for(self._read_request(reader), self._read_timeout)
            if request is not None:
                await self._respond(request, reader, writer)

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        raw = await read_request(reader)
        if raw is None:
            return None
        try:
            parsed = jsonx.loads(raw.body) if raw.body else None  # a 100 k-event history: 9 MB
        except ValueError:
            parsed = None
        with self._lock:
            request = RecordedRequest(
                len(self._requests), raw.method, raw.path, raw.headers, raw.body, parsed, time.monotonic()
            )
            self._requests.append(request)
        return request

    async def _choose(self, request: RecordedRequest) -> Response:
        if request.method != "POST":
            return http_error(405, f"method {request.method} not allowed", error_type="invalid_request_error")
        if request.path not in PATHS:
            return http_error(404, f"no route for {request.path}", error_type="invalid_request_error")
        if self.handler is not None:
            chosen = self.handler(request)
            if inspect.isawaitable(chosen):
                chosen = await chosen
            if chosen is not None:
                return chosen
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return json_response(
            500,
            {
                "error": {
                    "message": f"dsh test server: no scripted response left for request #{request.index}",
                    "type": "server_error",
                }
            },
        )

    async def _set_in_flight(self, delta: int) -> None:
        assert self._changed is not None
        async with self._changed:
            with self._lock:
                self._in_flight += delta
                self._max_in_flight = max(self._max_in_flight, self._in_flight)
            self._changed.notify_all()

    async def _respond(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await self._set_in_flight(1)
        try:
            response = await self._choose(request)
            await self._play(response, reader, writer)
        finally:
            with self._lock:
                request.ended_at = time.monotonic()
            await asyncio.shield(self._set_in_flight(-1))

    async def _play(
        self, response: Response, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Play the steps; the status line goes out right before the first ``Write``.

        So leading ``AwaitInFlight``/``Pause``/``Stall`` steps delay the headers, and a
        leading ``Drop`` closes the connection without any response.
        """
        fields = list(response.headers)
        if response.chunked:
            fields.append(("Transfer-Encoding", "chunked"))
        else:
            length = sum(len(s.data) for s in response.steps if isinstance(s, Write))
            fields.append(("Content-Length", str(length)))
        fields.append(("Connection", "close"))
        pending_head: bytes | None = head(response.status, fields)
        for step in (*response.steps, None):
            if pending_head is not None and not isinstance(step, (AwaitInFlight, Pause, Stall, Drop, Hold)):
                writer.write(pending_head)
                pending_head = None
            match step:
                case None:
                    if response.chunked:
                        writer.write(LAST_CHUNK)
                    await writer.drain()
                case Write(data=data):
                    writer.write(chunk(data) if response.chunked else data)
                    await writer.drain()
                case Pause(seconds=seconds):
                    await asyncio.sleep(seconds)
                case Stall(seconds=seconds):
                    await self._stall(reader, seconds)
                case Drop():
                    writer.transport.abort()
                    return
                case AwaitInFlight(count=count):
                    await self._await_in_flight(count)
                case Hold(release=release):
                    if not await asyncio.to_thread(release.wait, self._max_stall):
                        with self._lock:
                            self._gate_timeouts += 1
                case _:
                    assert_never(step)

    async def _stall(self, reader: asyncio.StreamReader, seconds: float | None) -> None:
        limit = self._max_stall if seconds is None else min(seconds, self._max_stall)
        if seconds is not None:
            await asyncio.sleep(limit)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(limit):
                while await reader.read(4096):
                    pass

    async def _await_in_flight(self, count: int) -> None:
        assert self._changed is not None
        try:
            async with asyncio.timeout(self._gate_timeout), self._changed:
                await self._changed.wait_for(lambda: self._in_flight >= count)
        except TimeoutError:
            with self._lock:
                self._gate_timeouts += 1

"""``dsh serve record``: a proxy that forwards Chat Completions to an upstream and records.

Each ``POST /v1/chat/completions`` is forwarded to ``UPSTREAM/chat/completions`` with the
client's ``Authorization`` header (passed through, never stored or logged); the upstream's
bytes go back to the client unchanged while the SSE is translated into dsh chunks
(``dsh.model.openai_wire.StreamTranslator``) with their timing. A request joins a client
session by its session headers (:mod:`dsh.serve.keys`: ``X-Dsh-Session`` / ``X-Dsh-Parent``,
Claude Code's session and agent ids), else
the known session whose history it extends (the longest), else it starts a new session.
After every call the whole directory is rewritten atomically (:func:`write_directory`).

A directory that is not empty (an earlier recording) is refused unless ``replace``
(``--force``): then the old recording stays whole while this one is made, and at
:meth:`RecordServer.close` the new files replace it in one step — staged in a sibling
directory and renamed into place by :func:`dsh.snapshot.recording.write_recording`, the rule
``dsh scenario record`` uses — so two recordings are never mixed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx2

from dsh import jsonx
from dsh.errors import ModelError, UsageError
from dsh.events.chunks import Chunk, Failure, Usage
from dsh.events.messages import Message
from dsh.hosts import HostPolicy
from dsh.http1 import DEFAULT_LIMITS, Limits, Log, stderr_log
from dsh.model import ModelRequest
from dsh.model.openai_wire import StreamTranslator
from dsh.model.sse import SseDecoder
from dsh.replay.wire_request import request_from_body
from dsh.serve.http import (
    HttpServer,
    Reply,
    Request,
    control_reply,
    json_body,
    json_reply,
    new_token,
    refusal,
)
from dsh.serve.keys import SessionKeys
from dsh.serve.recorder import RecordedSession, Settled, directory_files, new_session, write_directory
from dsh.serve.replay import CHAT_PATHS
from dsh.snapshot.recording import recover, write_recording

FORWARDED = ("authorization", "content-type", "accept", "user-agent")


class _Timer:
    """Gaps in ms between consecutive chunks, as the loop records them."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.dt: list[int] = []
        self._last = 0

    def add(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            now = time.monotonic_ns()
            if self.chunks:
                self.dt.append((now - self._last) // 1_000_000)
            self._last = now
            self.chunks.append(chunk)


def _usage(chunks: Sequence[Chunk]) -> Usage | None:
    found = [c["usage"] for c in chunks if c["type"] == "usage"]
    return found[-1].copy() if found else None


def _settle(timer: _Timer, failure: Failure | None, translator: StreamTranslator) -> Settled:
    wire = translator.usage
    return Settled(timer.chunks, timer.dt, failure, _usage(timer.chunks), dict(wire) if wire else None)


def completion_chunks(document: Any) -> Settled:
    """A non-streamed ``chat.completion`` as the chunks the same reply would have streamed."""
    timer = _Timer()
    translator = StreamTranslator()
    try:
        choices = document.get("choices") if isinstance(document, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        delta: dict[str, Any] = {k: message[k] for k in ("reasoning_content", "content") if message.get(k)}
        calls = message.get("tool_calls") or []
        if calls:
            delta["tool_calls"] = [{**call, "index": i} for i, call in enumerate(calls)]
        frame = {"choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}]}
        if isinstance(document, dict) and document.get("usage") is not None:
            frame["usage"] = document["usage"]
        timer.add(translator.feed(frame))
        timer.add(translator.end())
    except ModelError as exc:
        return _settle(timer, {"code": exc.code, "message": str(exc)}, translator)
    return _settle(timer, None, translator)


def replaces_recording(directory: Path, replace: bool) -> bool:
    """Whether recording into ``directory`` replaces what is there (it is not empty).

    Raises :class:`~dsh.errors.UsageError` when it is not empty and ``replace`` is false, or
    when it is not a directory.
    """
    recover(directory)  # what an interrupted replacement left beside it
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"dsh serve record: {directory} is not a directory")
    if not directory.is_dir() or next(directory.iterdir(), None) is None:
        return False
    if not replace:
        raise UsageError(
            f"dsh serve record: {directory} is not empty (an earlier recording?); "
            "--force replaces it as a whole when the server stops"
        )
    return True


class RecordServer:
    """The recording proxy for one directory."""

    def __init__(
        self,
        upstream: str,
        directory: Path,
        *,
        port: int = 0,
        session_headers: Sequence[str] = (),
        timeout: float = 600.0,
        allow_hosts: Sequence[str] = (),
        limits: Limits = DEFAULT_LIMITS,
        token: str | None = None,
        log: Log = stderr_log,
        replace: bool = False,
    ) -> None:
        self._replacing = replaces_recording(directory, replace)
        self.token = token or new_token()
        """The per-run token the control routes need (``X-Dsh-Token``)."""
        self.upstream = upstream.rstrip("/")
        self.directory = directory
        self.keys = SessionKeys(session_headers)
        self.sessions: list[RecordedSession] = []
        self._by_key: dict[str, RecordedSession] = {}
        self._timeout = timeout
        self._client: httpx2.AsyncClient | None = None
        self._write_lock = asyncio.Lock()
        self.http = HttpServer(self.handle, port=port, hosts=HostPolicy(allow_hosts), limits=limits, log=log)
        self.stopped = asyncio.Event()

    @property
    def base_url(self) -> str:
        return self.http.base_url

    async def start(self) -> None:
        self._client = httpx2.AsyncClient(timeout=httpx2.Timeout(self._timeout, connect=10.0))
        await self.http.start()

    async def close(self) -> None:
        await self.http.close()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await self._write(final=True)

    async def __aenter__(self) -> RecordServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def report(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "upstream": self.upstream,
            "sessions": [
                {"key": s.key, "id": s.header.id, "parent": s.header.parent_session, "events": len(s.events)}
                for s in self.sessions
            ],
        }

    async def _write(self, *, final: bool = False) -> None:
        async with self._write_lock:
            if not self._replacing:
                await asyncio.to_thread(write_directory, self.directory, list(self.sessions))
            elif final and (files := directory_files(self.sessions)):
                await asyncio.to_thread(write_recording, self.directory, files)

    def _session(
        self, key: str | None, parent_key: str | None, messages: Sequence[Message]
    ) -> RecordedSession:
        if key is not None and key in self._by_key:
            return self._by_key[key]
        if key is None:
            best: tuple[int, RecordedSession] | None = None
            for session in self.sessions:
                known = session.extends(messages)
                if known > 0 and (best is None or known > best[0]):
                    best = (known, session)
            if best is not None:
                return best[1]
        parent = self._by_key.get(parent_key) if parent_key is not None else None
        session = new_session(key, parent)
        self.sessions.append(session)
        if key is not None:
            self._by_key[key] = session
        return session

    async def handle(self, request: Request) -> Reply:
        control = control_reply(request, self.report, self.stopped, self.token)
        if control is not None:
            return control
        if request.path not in CHAT_PATHS or request.method != "POST":
            return refusal(404, f"dsh serve record: no route for {request.path[:100]}")
        body = json_body(request, "dsh serve record")
        if isinstance(body, Reply):
            return body
        live = request_from_body(body)
        key = self.keys.of(request.headers)
        session = self._session(key.session, key.parent, live.messages)
        headers = {h: request.headers[h] for h in FORWARDED if h in request.headers}
        assert self._client is not None
        upstream = self._client.build_request(
            "POST", self.upstream + "/chat/completions", content=request.body, headers=headers
        )
        try:
            response = await self._client.send(upstream, stream=True)
        except httpx2.HTTPError as exc:
            message = f"dsh serve record: cannot reach the upstream {self.upstream}: {type(exc).__name__}"
            await self._settled(session, live, Settled([], [], {"code": "CONNECTION", "message": message}))
            return json_reply(502, {"error": {"message": message, "type": "server_error"}})
        content_type = response.headers.get("content-type", "application/json")
        if response.status_code != 200 or "event-stream" not in content_type:
            try:
                raw = await response.aread()
            finally:
                await response.aclose()
            if response.status_code == 200:
                try:
                    settled = completion_chunks(jsonx.loads(raw))
                except ValueError:
                    settled = Settled([], [], {"code": "MALFORMED_RESPONSE", "message": "not JSON"})
            else:
                text = raw.decode("utf-8", "replace")[:400]
                settled = Settled([], [], {"code": f"HTTP_{response.status_code}", "message": text})
            await self._settled(session, live, settled)
            return Reply(response.status_code, raw, content_type)
        return Reply(200, content_type=content_type, stream=self._relay(response, session, live))

    async def _settled(self, session: RecordedSession, live: ModelRequest, settled: Settled) -> None:
        session.add_call(live, settled)
        await self._write()

    async def _relay(
        self, response: httpx2.Response, session: RecordedSession, live: ModelRequest
    ) -> AsyncIterator[bytes]:
        timer = _Timer()
        translator = StreamTranslator()
        decoder = SseDecoder()
        failure: Failure | None = {
            "code": "STREAM_CLOSED",
            "message": "the stream ended without [DONE]",
        }
        try:
            async for raw in response.aiter_raw():
                yield raw
                if failure is not None and failure["code"] != "STREAM_CLOSED":
                    continue
                try:
                    for event in decoder.feed(raw):
                        if event.data == "[DONE]":
                            timer.add(translator.end())
                            failure = None
                        elif event.data:
                            timer.add(translator.feed(jsonx.loads(event.data)))
                except ModelError as exc:
                    failure = {"code": exc.code, "message": str(exc)}
                except ValueError as exc:
                    failure = {"code": "MALFORMED_RESPONSE", "message": f"not JSON: {exc}"}
        finally:
            await response.aclose()
            await asyncio.shield(self._settled(session, live, _settle(timer, failure, translator)))

"""``dsh serve record``: a proxy that forwards each dialect to an upstream and records.

A ``POST /v1/X`` of a dialect dsh serve speaks (:mod:`dsh.serve.dialects`: Chat
Completions, the Responses API, the Messages API) is forwarded to ``UPSTREAM/X`` with the
client's own auth headers (``Authorization``; Anthropic's ``x-api-key``,
``anthropic-version``, ``anthropic-beta``: passed through, never stored or logged); the
upstream's bytes go back to the client unchanged while its dialect's recorder turns them
into dsh chunks with their timing (and, but for Chat Completions, keeps the exact events). A
request joins the known session of its client key (:mod:`dsh.serve.keys`; none: of every
unkeyed session) whose history it extends (the longest), else it starts a new session — a
keyed client that starts another conversation gets one of its own, with the same key, which
records the whole history it sent. After
every call the whole directory is rewritten atomically (:func:`write_directory`).

A directory that is not empty (an earlier recording) is refused unless ``replace``
(``--force``): then the old recording stays whole while this one is made, and at
:meth:`RecordServer.close` the new files replace it in one step — staged in a sibling
directory and renamed into place by :func:`dsh.snapshot.recording.write_recording`, the rule
``dsh scenario record`` uses — so two recordings are never mixed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx2

from dsh.errors import UsageError
from dsh.events.chunks import Failure
from dsh.events.messages import Message
from dsh.hosts import HostPolicy
from dsh.http1 import DEFAULT_LIMITS, Limits, Log, stderr_log
from dsh.model.sse import SseDecoder
from dsh.serve.calls import Settled
from dsh.serve.dialects import SUPPORTED, CallRecorder, Dialect, NotThisDialect, Parsed, dialect_for
from dsh.serve.dialects.wire import WireLog
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
from dsh.serve.recorder import RecordedSession, directory_files, new_session, write_directory
from dsh.snapshot.recording import recover, write_recording
from dsh.snapshot.redaction import DEFAULT_REDACTION, RedactOptions, read_input_document


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
        redact: RedactOptions = DEFAULT_REDACTION,
    ) -> None:
        self._replacing = replaces_recording(directory, replace)
        self.rule = redact.rule(read_input_document(directory) if directory.is_dir() else {})
        """How the recording is redacted (a salt an earlier recording here kept is reused)."""
        self.token = token or new_token()
        """The per-run token the control routes need (``X-Dsh-Token``)."""
        self.upstream = upstream.rstrip("/")
        self.directory = directory
        self.keys = SessionKeys(session_headers)
        self.sessions: list[RecordedSession] = []
        self._by_key: dict[str, RecordedSession] = {}
        """Each client key → its latest session (a child's ``X-Dsh-Parent`` names it)."""
        self.chain: dict[str, list[Message]] = {}
        """Each recorded reply's id → the history after it (``previous_response_id``)."""
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
                await asyncio.to_thread(write_directory, self.directory, list(self.sessions), self.rule)
            elif final and (files := directory_files(self.sessions, self.rule)):
                await asyncio.to_thread(write_recording, self.directory, files)

    def _session(
        self, key: str | None, parent_key: str | None, messages: Sequence[Message]
    ) -> RecordedSession:
        """The session a request joins: of the sessions with its key (all of them when it has
        none), the one whose history it extends the furthest; else a new one (with the key: a
        client that started another conversation, recorded whole)."""
        best: tuple[int, RecordedSession] | None = None
        for session in self.sessions:
            if session.key != key:
                continue
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
        dialect = dialect_for(request.path)
        if dialect is None or request.method != "POST":
            return refusal(
                404,
                f"dsh serve record: no route for {request.method} {request.path[:100]} "
                f"(supported: {SUPPORTED})",
            )
        body = json_body(request, "dsh serve record", dialect.shape)
        if isinstance(body, Reply):
            return body
        parsed = dialect.read(body, None, self.chain)
        if isinstance(parsed, NotThisDialect):
            return refusal(400, f"dsh serve record: {request.path}: {parsed.message}", shape=dialect.shape)
        key = self.keys.of(request.headers)
        session = self._session(key.session, key.parent, parsed.request.messages)
        headers = {h: request.headers[h] for h in dialect.forwarded if h in request.headers}
        headers["accept-encoding"] = "identity"  # the raw bytes relayed are the bytes recorded
        assert self._client is not None
        upstream = self._client.build_request(
            "POST",
            self.upstream + dialect.upstream_path + (f"?{request.query}" if request.query else ""),
            content=request.body,
            headers=headers,
        )
        try:
            response = await self._client.send(upstream, stream=True)
        except httpx2.HTTPError as exc:
            message = f"dsh serve record: cannot reach the upstream {self.upstream}: {type(exc).__name__}"
            await self._settled(
                session, dialect, parsed, Settled([], [], {"code": "CONNECTION", "message": message})
            )
            return json_reply(502, dialect.shape(message, "server_error", {}))
        content_type = response.headers.get("content-type", "application/json")
        if response.status_code == 200 and "event-stream" in content_type:
            stream = self._relay(response, session, dialect, parsed)
            return Reply(200, content_type=content_type, stream=stream)
        try:
            raw = await response.aread()
        finally:
            await response.aclose()
        if response.status_code == 200:
            recorder = dialect.recorder()
            recorder.whole(raw)
            settled = recorder.settle()
        else:
            text = raw.decode("utf-8", "replace")
            failure: Failure = {"code": f"HTTP_{response.status_code}", "message": text[:400]}
            wire = None
            if dialect.name != "chat":
                log = WireLog(dialect.name)
                log.whole(raw)
                wire = log.record(response.status_code)
            settled = Settled([], [], failure, wire=wire)
        await self._settled(session, dialect, parsed, settled)
        return Reply(response.status_code, raw, content_type)

    async def _settled(
        self, session: RecordedSession, dialect: Dialect, parsed: Parsed, settled: Settled
    ) -> None:
        if settled.wire is not None and parsed.checked:
            settled.wire["request"] = parsed.checked
        session.add_call(parsed.request, settled, dialect)
        response_id = settled.wire.get("responseId") if settled.wire is not None else None
        if response_id and settled.failure is None:
            self.chain[response_id] = list(session.history)
        await self._write()

    async def _relay(
        self, response: httpx2.Response, session: RecordedSession, dialect: Dialect, parsed: Parsed
    ) -> AsyncIterator[bytes]:
        recorder: CallRecorder = dialect.recorder()
        decoder = SseDecoder()
        try:
            async for raw in response.aiter_raw():
                yield raw
                for event in decoder.feed(raw):
                    recorder.event(event)
            for event in decoder.close():
                recorder.event(event)
        finally:
            await response.aclose()
            await asyncio.shield(self._settled(session, dialect, parsed, recorder.settle()))

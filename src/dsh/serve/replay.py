"""``dsh serve replay``: recorded sessions served to any OpenAI-compatible client, checked.

Each incoming ``/v1/chat/completions`` request is routed to a recorded session — by a
session header (:mod:`dsh.serve.keys`: ``X-Dsh-Session``, any ``--session-header``, Claude
Code's agent and session ids; naming the recorded client key, the log file name or the
recorded session id), else by the history it extends (a session
already in progress whose next call matches), else by first-call order (the first session
not started yet whose first call matches) — then checked with the faithful-replay rules
(:class:`~dsh.replay.fidelity.SessionCheck`, both sides seen through the wire) and answered
with that call's recorded chunks: SSE exactly as recorded (one event per recorded delta,
the recorded gaps at ``speed`` 1, none at 0, divided by N), or one JSON completion when the
client did not ask to stream. A request that matches nothing, diverges or finds its script
exhausted gets HTTP 409 with a JSON body naming the session, the call and the diff.

:meth:`ReplayServer.answer` is the one home of all of that and never waits (pacing is in
the reply): the HTTP server calls it, and so does the in-process
:class:`~dsh.serve.transport.ReplayTransport`.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.errors import ScenarioError
from dsh.events.payloads import stream_of
from dsh.hosts import HostPolicy
from dsh.http1 import DEFAULT_LIMITS, Limits, Log, stderr_log
from dsh.replay.derive import Derived, derive
from dsh.replay.entries import Entry
from dsh.replay.fidelity import Divergence, SessionCheck, Tolerances
from dsh.replay.files import read_recorded, read_tolerances
from dsh.replay.layout import PRIMARY
from dsh.replay.verdict import Verdict, verdict
from dsh.replay.wire_request import ReadBody, read_body, wire_derived
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
from dsh.serve.wire_out import completion, sse_events
from dsh.store import LoadedSession

_HTTP_CODE = re.compile(r"HTTP_(\d{3})")
CLIENT_EVENT = "serve/client"
"""The ignorable event ``dsh serve record`` writes first: ``{session, parent?}`` (client keys)."""
CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})


@dataclass(slots=True)
class ServedSession:
    """One recorded session and how far the replay has consumed it."""

    label: str
    recorded_id: str
    client_key: str | None
    derived: Derived
    timing: list[tuple[list[int], dict[str, Any] | None]]
    check: SessionCheck
    served: int = 0
    divergences: list[dict[str, Any]] = field(default_factory=list)
    last: ReadBody | None = None
    """The last request this session answered, as read (the next read reuses its equal part)."""

    @property
    def calls(self) -> int:
        return len(self.derived.entries)

    def names(self) -> set[str]:
        names = {self.label, self.recorded_id, self.label.removesuffix(".jsonl")}
        if self.client_key:
            names.add(self.client_key)
        return names

    def to_json(self) -> dict[str, Any]:
        return {"session": self.label, "recordedId": self.recorded_id, "clientKey": self.client_key,
                "calls": self.calls, "served": self.served, "divergences": self.divergences}  # fmt: skip


def _timing(events: Sequence[Any], calls: int) -> list[tuple[list[int], dict[str, Any] | None]]:
    """Per call: the recorded gaps and the provider's usage object (``dsh serve record`` keeps it)."""
    found = [(stream["dt"], e.data.get("wireUsage")) for e in events if (stream := stream_of(e)) is not None]
    return found if len(found) == calls else [([], None) for _ in range(calls)]


def _client_key(events: Sequence[Any]) -> str | None:
    for event in events[:4]:
        if event.type == CLIENT_EVENT and isinstance(event.data, dict):
            key = event.data.get("session")
            return str(key) if key is not None else None
    return None


def load_sessions(directory: Path, tolerances: Tolerances | None = None) -> list[ServedSession]:
    """Every recorded session of ``directory`` (primary first), ready to serve."""
    if not directory.is_dir():
        raise ScenarioError(f"dsh serve replay: {directory} is not a directory")
    recorded = read_recorded(directory)
    if recorded.primary is None:
        raise ScenarioError(f"dsh serve replay: {directory / PRIMARY} is missing (record first)")
    rules = tolerances if tolerances is not None else read_tolerances(directory)
    logs: list[tuple[str, LoadedSession]] = [(PRIMARY, recorded.primary), *recorded.children]
    out = []
    for label, loaded in logs:
        cut = loaded.inherited_event_count
        where = f"{directory.name}/{label}"
        raw = derive(loaded.events[cut:], where, inherited=loaded.events[:cut])
        wired = wire_derived(raw)
        version = recorded.versions.get(label, 2)
        check = SessionCheck(label, loaded.header.id, wired, version=version, tolerances=rules, cwd=None)
        out.append(
            ServedSession(label, loaded.header.id, _client_key(loaded.events), wired,
                          _timing(loaded.events[cut:], len(wired.entries)), check)
        )  # fmt: skip
    return out


def _conflict(reason: str, **fields: Any) -> Reply:
    return refusal(409, reason, kind="dsh_replay_divergence", **fields)


class ReplayServer:
    """The replay HTTP server for one recorded directory."""

    def __init__(
        self,
        directory: Path,
        *,
        port: int = 0,
        speed: float = 0.0,
        session_headers: Sequence[str] = (),
        tolerances: Tolerances | None = None,
        allow_hosts: Sequence[str] = (),
        limits: Limits = DEFAULT_LIMITS,
        token: str | None = None,
        log: Log = stderr_log,
    ) -> None:
        self.directory = directory
        self.token = token or new_token()
        """The per-run token the control routes need (``X-Dsh-Token``)."""
        self.sessions = load_sessions(directory, tolerances)
        self.speed = speed
        self.keys = SessionKeys(session_headers)
        self.refused: list[dict[str, Any]] = []
        self._diverged: list[Divergence | None] = []
        """Per refusal, the divergence it refused (``None``: a refusal of another kind)."""
        self._lock = threading.Lock()  # answer() is called from the loop and from transports' threads
        self.http = HttpServer(self.handle, port=port, hosts=HostPolicy(allow_hosts), limits=limits, log=log)
        self.stopped = asyncio.Event()

    @property
    def base_url(self) -> str:
        return self.http.base_url

    async def start(self) -> None:
        await self.http.start()

    async def close(self) -> None:
        await self.http.close()

    async def __aenter__(self) -> ReplayServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- report -----------------------------------------------------------------------

    def unconsumed(self) -> list[ServedSession]:
        return [s for s in self.sessions if s.served < s.calls]

    def verdict(self) -> Verdict:
        """The replay verdict (:func:`dsh.replay.verdict.verdict`): the first divergence,
        every other refusal, then the recorded calls no client asked for."""
        diverged = [d for d in self._diverged if d is not None]
        refusals = [r["message"] for r, d in zip(self.refused, self._diverged, strict=True) if d is None]
        unconsumed = [s.label for s in self.unconsumed()]
        return verdict(
            self.directory.name,
            divergences=diverged,
            problems=refusals,
            unconsumed=f"recorded calls not served in {', '.join(unconsumed)}" if unconsumed else None,
        )

    def report(self) -> dict[str, Any]:
        found = self.verdict()
        return {
            "ok": found.ok,
            "problems": list(found.problems),
            "directory": str(self.directory),
            "sessions": [s.to_json() for s in self.sessions],
            "unconsumed": [s.label for s in self.unconsumed()],
            "refused": self.refused,
        }

    # -- HTTP -------------------------------------------------------------------------

    async def handle(self, request: Request) -> Reply:
        """The HTTP server's handler: :meth:`answer`."""
        return self.answer(request)

    def answer(self, request: Request) -> Reply:
        """The reply to one request (routing, the check, the recorded answer); thread-safe."""
        with self._lock:
            return self._answer_request(request)

    def _answer_request(self, request: Request) -> Reply:
        control = control_reply(request, self.report, self.stopped, self.token)
        if control is not None:
            return control
        if request.path not in CHAT_PATHS:
            return refusal(404, f"dsh serve: no route for {request.path[:100]}")
        if request.method != "POST":
            return refusal(405, f"dsh serve: {request.method} not allowed")
        body = json_body(request, "dsh serve")
        if isinstance(body, Reply):
            return body
        routed = self._route(self.keys.of(request.headers).session, body)
        if isinstance(routed, Reply):
            return routed
        session = routed
        k = session.served
        session.served += 1
        return self._answer(session, k, body)

    def _refuse(self, reason: str, found: Divergence | None, session: ServedSession | None) -> Reply:
        fields: dict[str, Any] = {}
        if session is not None:
            fields["session"] = session.label
            fields["recordedId"] = session.recorded_id
            fields["call"] = session.served + 1
        if found is not None:
            fields["what"] = found.what
            fields["diff"] = found.diff()
            fields["divergence"] = found.to_json()
        self.refused.append({"message": reason, **fields})
        self._diverged.append(found)
        return _conflict(reason, **fields)

    def _route(self, key: str | None, body: dict[str, Any]) -> ServedSession | Reply:
        if key is not None:
            named = [s for s in self.sessions if key in s.names()]
            if not named:
                return self._refuse(f"dsh serve: no recorded session is named {key!r}", None, None)
            open_ = [s for s in named if s.served < s.calls]
            if not open_:
                return self._refuse(
                    f"dsh serve: the script of session {named[0].label} is exhausted "
                    f"({named[0].calls} recorded calls served)", None, named[0]
                )  # fmt: skip
            candidates = open_[:1]
        else:
            started = [s for s in self.sessions if 0 < s.served < s.calls]
            fresh = [s for s in self.sessions if s.served == 0 and s.calls]
            candidates = started + fresh
            if not candidates:
                return self._refuse("dsh serve: every recorded script is exhausted", None, None)
        first: tuple[ServedSession, Divergence] | None = None
        unread: ReadBody | None = None  # the body read without a previous request, once
        for session in candidates:
            if session.last is not None:
                live = read_body(body, session.last)
            else:
                live = unread = unread or read_body(body)
            found = session.check.check(session.served, live.request)
            if found is None or found.tolerated_by is not None:
                if found is not None:
                    session.divergences.append(found.to_json())
                session.last = live
                return session
            if first is None:
                first = (session, found)
        assert first is not None
        session, found = first
        return self._refuse(found.headline(self.directory.name), found, session)

    def _answer(self, session: ServedSession, k: int, body: dict[str, Any]) -> Reply:
        entry: Entry = session.derived.entries[k]
        model = str(body.get("model", ""))
        completion_id = f"chatcmpl-dsh-{session.label.removesuffix('.jsonl')}-{k + 1}"
        failure = (entry.code, entry.message) if entry.kind != "chunks" else None
        status = _HTTP_CODE.fullmatch(failure[0]) if failure is not None and not entry.chunks else None
        if failure is not None and status is not None:  # a recorded HTTP error: the same status and body
            text = failure[1]
            try:
                jsonx.loads(text)
            except ValueError:
                return json_reply(int(status.group(1)), {"error": {"message": text, "code": failure[0]}})
            return Reply(int(status.group(1)), text.encode())
        if not body.get("stream"):
            if failure is not None:
                return json_reply(
                    500, {"error": {"message": failure[1], "type": "server_error", "code": failure[0]}}
                )
            done = completion(entry.chunks, model=model, completion_id=completion_id)
            if session.timing[k][1] is not None:
                done["usage"] = session.timing[k][1]
            return json_reply(200, done)
        gaps, usage = session.timing[k]
        events = sse_events(
            entry.chunks, gaps, model=model, completion_id=completion_id, failure=failure, usage=usage
        )
        sse = "text/event-stream; charset=utf-8"
        if self.speed == 0:  # no pacing: the same SSE events in one write, with a length
            return Reply(200, b"".join(b"data: " + e.payload + b"\n\n" for e in events), sse)
        speed = self.speed
        paced = [(e.gap_ms / 1000 / speed, b"data: " + e.payload + b"\n\n") for e in events]
        return Reply(200, content_type=sse, paced=paced)

"""``dsh serve replay``: recorded sessions served to any client of the dialects it speaks, checked.

Each incoming request of a dialect (:mod:`dsh.serve.dialects`: ``/v1/chat/completions``,
``/v1/responses``, ``/v1/messages``) is read by that dialect and routed to a recorded session — by a
session header (:mod:`dsh.serve.keys`: ``X-Dsh-Session``, any ``--session-header``, Claude
Code's agent and session ids; naming the recorded client key, the log file name or the
recorded session id), else by the history it extends (a session
already in progress whose next call matches), else by first-call order (the first session
not started yet whose first call matches) — then checked with the faithful-replay rules
(:class:`~dsh.replay.fidelity.SessionCheck`, both sides seen through the wire) and answered
with that call's recorded reply (the dialect's ``answer``: Chat Completions rebuilt from the
recorded chunks, the other dialects their exact recorded events; the recorded gaps at
``speed`` 1, none at 0, divided by N). A request that matches nothing, diverges (its
dialect's own fields too: ``tool_choice``, streaming, the dialect itself) or finds its
script exhausted gets HTTP 409 in the dialect's error shape naming the session, the call and
the diff.

:meth:`ReplayServer.answer` is the one home of all of that and never waits (pacing is in
the reply): the HTTP server calls it, and so does the in-process
:class:`~dsh.serve.transport.ReplayTransport`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dsh.events.messages import Message
from dsh.hosts import HostPolicy
from dsh.http1 import DEFAULT_LIMITS, Limits, Log, stderr_log
from dsh.replay.fidelity import Divergence, Tolerances
from dsh.replay.verdict import Verdict, verdict
from dsh.serve.dialects import SUPPORTED, Call, Dialect, NotThisDialect, Parsed, dialect_for
from dsh.serve.http import HttpServer, Reply, Request, control_reply, json_body, new_token, refusal
from dsh.serve.keys import SessionKeys
from dsh.serve.sessions import ServedSession, load_sessions, own_fields


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
        self.chain: dict[str, list[Message]] = {}
        """Each served reply's id → the history after it (``previous_response_id``)."""
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
        dialect = dialect_for(request.path)
        if dialect is None:
            return refusal(404, f"dsh serve: no route for {request.path[:100]} (supported: {SUPPORTED})")
        if request.method != "POST":
            return refusal(405, f"dsh serve: {request.method} not allowed", shape=dialect.shape)
        body = json_body(request, "dsh serve", dialect.shape)
        if isinstance(body, Reply):
            return body
        first = dialect.read(body, None, self.chain)
        if isinstance(first, NotThisDialect):
            return refusal(400, f"dsh serve: {request.path}: {first.message}", shape=dialect.shape)
        if first.missing is not None:
            return self._refuse(
                dialect,
                f"dsh serve: previous_response_id {first.missing!r} names no reply this replay has served",
                None,
                None,
            )
        routed = self._route(dialect, self.keys.of(request.headers).session, body, first)
        if isinstance(routed, Reply):
            return routed
        session, parsed = routed
        k = session.served
        session.served += 1
        return self._answer(session, k, parsed, body)

    def _refuse(
        self,
        dialect: Dialect,
        reason: str,
        found: Divergence | None,
        session: ServedSession | None,
        own: tuple[str, str, str] | None = None,
    ) -> Reply:
        fields: dict[str, Any] = {}
        if session is not None:
            fields["session"] = session.label
            fields["recordedId"] = session.recorded_id
            fields["call"] = session.served + 1
        if found is not None:
            fields["what"] = found.what
            fields["diff"] = found.diff()
            fields["divergence"] = found.to_json()
        elif own is not None:
            fields["what"] = own[0]
            fields["diff"] = f"--- recorded\n+++ live\n-{own[1]}\n+{own[2]}"
        self.refused.append({"message": reason, **fields})
        self._diverged.append(found)
        return refusal(409, reason, kind="dsh_replay_divergence", shape=dialect.shape, **fields)

    def _candidates(self, dialect: Dialect, key: str | None) -> list[ServedSession] | Reply:
        if key is not None:
            named = [s for s in self.sessions if key in s.names()]
            if not named:
                return self._refuse(dialect, f"dsh serve: no recorded session is named {key!r}", None, None)
            open_ = [s for s in named if s.served < s.calls]
            if not open_:
                return self._refuse(
                    dialect,
                    f"dsh serve: the script of session {named[0].label} is exhausted "
                    f"({named[0].calls} recorded calls served)",
                    None,
                    named[0],
                )
            # one key, several conversations: the one the request continues, else the next fresh one
            return [s for s in open_ if s.served] + [s for s in open_ if not s.served]
        started = [s for s in self.sessions if 0 < s.served < s.calls]
        fresh = [s for s in self.sessions if s.served == 0 and s.calls]
        if not started and not fresh:
            return self._refuse(dialect, "dsh serve: every recorded script is exhausted", None, None)
        return started + fresh

    def _route(
        self, dialect: Dialect, key: str | None, body: Mapping[str, Any], unread: Parsed
    ) -> tuple[ServedSession, Parsed] | Reply:
        candidates = self._candidates(dialect, key)
        if isinstance(candidates, Reply):
            return candidates
        first: tuple[ServedSession, Divergence | None, tuple[str, str, str] | None] | None = None
        for session in candidates:
            if session.dialect is not dialect:
                if first is None:
                    first = (session, None, ("the dialect", session.dialect.name, dialect.name))
                continue
            live = unread
            if session.last is not None:
                again = dialect.read(body, session.last, self.chain)
                live = again if isinstance(again, Parsed) else unread
            found = session.check.check(session.served, live.request)
            differs = own_fields(session, session.served, live) if found is None else None
            if (found is None or found.tolerated_by is not None) and differs is None:
                if found is not None:
                    session.divergences.append(found.to_json())
                session.last = live
                return session, live
            if first is None:
                first = (session, found, differs)
        assert first is not None
        session, found, own = first
        if found is not None:
            return self._refuse(dialect, found.headline(self.directory.name), found, session)
        assert own is not None
        what, recorded, live_value = own
        reason = (
            f"dsh serve: {self.directory.name}/{session.label} call {session.served + 1}: "
            f"{what} differs (recorded {recorded}, live {live_value})"
        )
        return self._refuse(dialect, reason, None, session, own)

    def _answer(self, session: ServedSession, k: int, parsed: Parsed, body: Mapping[str, Any]) -> Reply:
        entry = session.derived.entries[k]
        recorded = session.replies[k]
        failure = (entry.code, entry.message) if entry.kind != "chunks" else None
        reply_id = f"chatcmpl-dsh-{session.label.removesuffix('.jsonl')}-{k + 1}"
        call = Call(parsed, body, recorded, entry.chunks, failure, reply_id)
        response_id = recorded.wire.get("responseId") if recorded.wire is not None else None
        if response_id and recorded.message is not None:
            self.chain[response_id] = [*parsed.request.messages, session.dialect.visible(recorded.message)]
        return session.dialect.answer(call, self.speed)

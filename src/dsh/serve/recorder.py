"""Client sessions as dsh version-2 logs: each proxied request and its response, as events.

One :class:`RecordedSession` per client session, written through :class:`dsh.session.Session`
with the event vocabulary (:mod:`dsh.events.vocabulary`, :mod:`dsh.events.payloads`).
:meth:`RecordedSession.add_call` is the one place a proxied call becomes events: what the
request adds to the history (user prompts → ``user/message``, opening a turn; tool results
→ ``tool/result`` of the previous step; assistant messages the client wrote itself →
``assistant/message`` without a stream, which makes no call), a ``request/header`` when
system prompt, tools, model or ``max_tokens`` changed (``config.dialect`` noting a dialect
other than Chat Completions), then ``step/start``, the settlement (``assistant/message`` with
the exact timed ``stream`` — and, but for Chat Completions, the exact ``wire`` events — or
``assistant/attempt`` with the failure), ``tool/call`` per call and ``step/end``.
:func:`write_directory` writes every session atomically: ``session.jsonl`` (the first
session), ``session.N.jsonl`` (the rest, by creation) and ``input.json`` (the first
session's prompts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.events import Event
from dsh.events.chunks import StreamRecord
from dsh.events.header import SessionHeader, child_depth
from dsh.events.messages import Message, Source
from dsh.events.payloads import (
    RequestHeader,
    assistant_attempt_data,
    assistant_message_data,
    header_body,
    request_header,
    step_mark,
    tool_call,
    tool_result_data,
    turn_end,
    turn_start,
)
from dsh.events.vocabulary import (
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    REQUEST_HEADER,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
from dsh.ids import new_message_id, new_session_id, now_ms
from dsh.model import ModelRequest
from dsh.replay.wire_request import WIRE_PROVIDER as PROVIDER
from dsh.serve.calls import Settled
from dsh.serve.dialects import CHAT, Dialect
from dsh.session import Session
from dsh.session.timeline import Prompt, Timeline
from dsh.snapshot.redaction import RecordingRule, redact_session
from dsh.store import LoadedSession
from dsh.store.logfile import encode_log, write_file_atomic

__all__ = ["CLIENT_EVENT", "RecordedSession", "Settled", "directory_files", "new_session", "write_directory"]

CLIENT_EVENT = "serve/client"
"""The ignorable event a keyed recording starts with: ``{session}`` (the client's key)."""


def _comparable(message: Message) -> Any:
    """A message for continuity: assistant reasoning is left out (clients rarely send it back)."""
    content = message.get("content")
    if message.get("role") == "assistant" and isinstance(content, list):
        content = [b for b in content if isinstance(b, dict) and b.get("type") != "reasoning"]
    return (message.get("role"), content)


@dataclass(slots=True)
class RecordedSession:
    """One client session's log, built request by request."""

    key: str | None
    log: Session
    history: list[Message] = field(default_factory=list)
    """The dsh history so far as the client's wire shows it (for continuity routing)."""
    turn: int = 0
    step: int = 0
    open_turn: bool = False
    last_header: RequestHeader | None = None

    @property
    def header(self) -> SessionHeader:
        return self.log.header

    @property
    def events(self) -> Sequence[Event]:
        return self.log.events

    def extends(self, messages: Sequence[Message]) -> int:
        """How many known messages ``messages`` starts with, or -1 when it does not extend them."""
        known = self.history
        if len(messages) < len(known):
            return -1
        if all(_comparable(a) == _comparable(b) for a, b in zip(known, messages, strict=False)):
            return len(known)
        return -1

    def _start_turn(self) -> None:
        if self.open_turn:
            self.log.append(TURN_END, turn_end(self.turn, {"kind": "completed"}))
        self.turn += 1
        self.step = 0
        self.open_turn = True
        self.log.append(TURN_START, turn_start(self.turn))

    def _history(self, fresh: Sequence[Message]) -> None:
        for message in fresh:
            source: Source | dict[str, Any] = message.get("source") or {}
            if message.get("role") == "assistant":
                if not self.open_turn:
                    self._start_turn()
                stored: Message = {
                    **message,
                    "source": {"kind": "model", "provider": "client"},
                    "id": new_message_id(),
                }
                self.log.append(ASSISTANT_MESSAGE, assistant_message_data(self.turn, self.step, stored, None))
            elif source.get("kind") == "tool" and self.open_turn:
                stored = {**message, "id": new_message_id()}
                self.log.append(TOOL_RESULT, tool_result_data(self.turn, self.step, stored))
            else:
                if source.get("kind") in ("user", "tool") or not self.open_turn:
                    self._start_turn()
                self.log.append(USER_MESSAGE, {**message, "id": new_message_id()})

    def add_call(self, request: ModelRequest, settled: Settled, dialect: Dialect = CHAT) -> None:
        """Append one request (its new history and header) and what the call produced: the one
        place a proxied request and its reply become events (redact them here)."""
        if not self.events and self.key is not None:
            self.log.append_event(Event(CLIENT_EVENT, 0, now_ms(), {"session": self.key}, ignorable=True))
        self._history(request.messages[len(self.history) :])
        noted = None if dialect.name == CHAT.name else dialect.name
        header = header_body(
            PROVIDER, request.model, request.max_tokens, request.system, list(request.tools), dialect=noted
        )
        if header != self.last_header:
            reason = "initial" if self.last_header is None else "change"
            self.log.append(REQUEST_HEADER, request_header(header, reason))
            self.last_header = header
        if not self.open_turn:
            self._start_turn()
        self.step += 1
        turn, step = self.turn, self.step
        self.log.append(STEP_START, step_mark(turn, step))
        stream: StreamRecord = {"chunks": settled.chunks, "dt": settled.dt}
        self.history = list(request.messages)
        if settled.failure is not None:
            attempt = assistant_attempt_data(turn, step, settled.failure, stream, wire=settled.wire)
            self.log.append(ASSISTANT_ATTEMPT, attempt)
        else:
            blocks = [c["block"] for c in settled.chunks if c["type"] == "block-end"]
            reply: Message = {
                "role": "assistant",
                "content": blocks,
                "source": {"kind": "model", "provider": PROVIDER, "model": request.model},
                "id": new_message_id(),
            }
            data = assistant_message_data(
                turn,
                step,
                reply,
                stream,
                usage=settled.usage,
                wire_usage=settled.wire_usage,
                wire=settled.wire,
            )
            self.log.append(ASSISTANT_MESSAGE, data)
            for block in blocks:
                if block.get("type") == "tool-call":
                    call = tool_call(
                        turn, step, block.get("id", ""), block.get("name", ""), block.get("arguments", "")
                    )
                    self.log.append(TOOL_CALL, call)
            self.history.append(dialect.visible(reply))
        self.log.append(STEP_END, step_mark(turn, step))

    def closed(self) -> list[Event]:
        """The events with the open turn closed (``turn/end completed``), for writing."""
        if not self.open_turn:
            return list(self.events)
        end = Event(TURN_END, len(self.events), now_ms(), turn_end(self.turn, {"kind": "completed"}))
        return [*self.events, end]


def new_session(key: str | None, parent: RecordedSession | None) -> RecordedSession:
    header = SessionHeader(
        id=new_session_id(),
        created_at=now_ms(),
        parent_session=parent.header.id if parent is not None else None,
        origin="subagent" if parent is not None else None,
        delegation_depth=child_depth(parent.header.delegation_depth) if parent is not None else 0,
    )
    return RecordedSession(key, Session(header))


def directory_files(sessions: Sequence[RecordedSession], rule: RecordingRule) -> dict[str, bytes]:
    """The files of a recorded directory, redacted by ``rule`` (``dsh.snapshot.redaction``: the
    sessions in memory stay as the client sent them, for routing): every session with events
    (first → ``session.jsonl``, the rest ``session.N.jsonl``) and ``input.json`` (the first
    session's prompts, and the rule's salt and regexes)."""
    files: dict[str, bytes] = {}
    kept = [
        redact_session(LoadedSession(s.header, 0, s.closed()), rule.redactor) for s in sessions if s.events
    ]
    for n, loaded in enumerate(kept):
        name = "session.jsonl" if n == 0 else f"session.{n}.jsonl"
        files[name] = encode_log(loaded)
    if kept:
        steps: list[dict[str, Any]] = [{"op": "newSession"}]
        timeline = Timeline()
        for event in kept[0].events:
            prompts = [i for i in timeline.feed(kept[0].header.id, event) if isinstance(i, Prompt)]
            steps += [{"op": "prompt", "text": prompt.text} for prompt in prompts]
        files["input.json"] = jsonx.dumps(rule.input_document({"steps": steps})) + b"\n"
    return files


def write_directory(directory: Path, sessions: Sequence[RecordedSession], rule: RecordingRule) -> list[Path]:
    """Write :func:`directory_files` into ``directory``, each file atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in directory_files(sessions, rule).items():
        write_file_atomic(directory / name, data)
        written.append(directory / name)
    return written

"""Client sessions as dsh version-2 logs: each proxied request and its response, as events.

One :class:`RecordedSession` per client session. For each request it appends what the
request adds to the history (user prompts → ``user/message``, opening a turn; tool results
→ ``tool/result`` of the previous step; assistant messages the client wrote itself →
``assistant/message`` without a stream, which makes no call), a ``request/header`` when
system prompt, tools, model or ``max_tokens`` changed, then ``step/start``, the settlement
(``assistant/message`` with the exact timed ``stream``, or ``assistant/attempt`` with the
failure), ``tool/call`` per call and ``step/end``. :func:`write_directory` writes every
session atomically: ``session.jsonl`` (the first session), ``session.N.jsonl`` (the rest,
by creation) and ``input.json`` (the first session's prompts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.events import Event
from dsh.events.chunks import Chunk, Failure, StreamRecord, Usage
from dsh.events.header import SessionHeader
from dsh.events.messages import Block, Message, Source
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
from dsh.ids import new_message_id, new_session_id, now_ms
from dsh.model import ModelRequest
from dsh.replay.wire_request import WIRE_PROVIDER as PROVIDER
from dsh.store import LoadedSession
from dsh.store.logfile import encode_log, write_file_atomic

CLIENT_EVENT = "serve/client"


@dataclass(slots=True)
class Settled:
    """What one proxied call produced: its chunks and gaps, and a failure if it failed."""

    chunks: list[Chunk]
    dt: list[int]
    failure: Failure | None = None
    usage: Usage | None = None
    wire_usage: dict[str, Any] | None = None
    """The provider's own usage object, kept so a replay shows the client the same one."""


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
    header: SessionHeader
    events: list[Event] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    """The dsh history so far as the client's wire shows it (for continuity routing)."""
    turn: int = 0
    step: int = 0
    open_turn: bool = False
    last_header: RequestHeader | None = None

    def append(
        self, etype: str, data: Mapping[str, Any], *, surface: bool = False, ignorable: bool = False
    ) -> None:
        self.events.append(
            Event(etype, len(self.events), now_ms(), data, "append" if surface else None, None, ignorable)
        )

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
            self.append("turn/end", turn_end(self.turn, {"kind": "completed"}))
        self.turn += 1
        self.step = 0
        self.open_turn = True
        self.append("turn/start", turn_start(self.turn))

    def add_call(self, request: ModelRequest, settled: Settled) -> None:
        """Append one request (its new history and header) and what the call produced."""
        if not self.events and self.key is not None:
            self.append(CLIENT_EVENT, {"session": self.key}, ignorable=True)
        fresh = list(request.messages[len(self.history) :])
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
                self.append("assistant/message", assistant_message_data(self.turn, self.step, stored, None),
                            surface=True)  # fmt: skip
            elif source.get("kind") == "tool" and self.open_turn:
                stored = {**message, "id": new_message_id()}
                self.append("tool/result", tool_result_data(self.turn, self.step, stored), surface=True)
            else:
                if source.get("kind") in ("user", "tool") or not self.open_turn:
                    self._start_turn()
                self.append("user/message", {**message, "id": new_message_id()}, surface=True)
        header = header_body(PROVIDER, request.model, request.max_tokens, request.system, list(request.tools))
        if header != self.last_header:
            reason = "initial" if self.last_header is None else "change"
            self.append("request/header", request_header(header, reason))
            self.last_header = header
        if not self.open_turn:
            self._start_turn()
        self.step += 1
        turn, step = self.turn, self.step
        self.append("step/start", step_mark(turn, step))
        stream: StreamRecord = {"chunks": settled.chunks, "dt": settled.dt}
        self.history = list(request.messages)
        if settled.failure is not None:
            self.append("assistant/attempt", assistant_attempt_data(turn, step, settled.failure, stream))
        else:
            blocks = [c["block"] for c in settled.chunks if c["type"] == "block-end"]
            reply: Message = {"role": "assistant", "content": blocks,
                       "source": {"kind": "model", "provider": PROVIDER, "model": request.model},
                       "id": new_message_id()}  # fmt: skip
            data = assistant_message_data(
                turn, step, reply, stream, usage=settled.usage, wire_usage=settled.wire_usage
            )
            self.append("assistant/message", data, surface=True)
            for block in blocks:
                if block.get("type") == "tool-call":
                    call = tool_call(
                        turn, step, block.get("id", ""), block.get("name", ""), block.get("arguments", "")
                    )
                    self.append("tool/call", call)
            self.history.append({"role": "assistant", "content": _wire_visible(blocks)})
        self.append("step/end", step_mark(turn, step))

    def closed(self) -> list[Event]:
        """The events with the open turn closed (``turn/end completed``), for writing."""
        if not self.open_turn:
            return list(self.events)
        end = Event("turn/end", len(self.events), now_ms(), turn_end(self.turn, {"kind": "completed"}))
        return [*self.events, end]


def _wire_visible(blocks: list[Block]) -> list[Block]:
    """An assistant reply as the wire parse of the client's next request will show it."""
    out: list[Block] = [b for b in blocks if b.get("type") == "reasoning" and b.get("text")]
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    if text:
        out.append({"type": "text", "text": text})
    out.extend(
        {
            "type": "tool-call",
            "id": b.get("id", ""),
            "name": b.get("name", ""),
            "arguments": b.get("arguments", ""),
        }
        for b in blocks
        if b.get("type") == "tool-call"
    )
    return out


def new_session(key: str | None, parent: RecordedSession | None) -> RecordedSession:
    header = SessionHeader(
        id=new_session_id(),
        created_at=now_ms(),
        parent_session=parent.header.id if parent is not None else None,
        origin="subagent" if parent is not None else None,
        delegation_depth=parent.header.delegation_depth + 1 if parent is not None else 0,
    )
    return RecordedSession(key, header)


def directory_files(sessions: Sequence[RecordedSession]) -> dict[str, bytes]:
    """The files of a recorded directory: every session with events (first → ``session.jsonl``,
    the rest ``session.N.jsonl``) and ``input.json`` (the first session's prompts)."""
    files: dict[str, bytes] = {}
    kept = [s for s in sessions if s.events]
    for n, session in enumerate(kept):
        name = "session.jsonl" if n == 0 else f"session.{n}.jsonl"
        files[name] = encode_log(LoadedSession(session.header, 0, session.closed()))
    if kept:
        steps: list[dict[str, Any]] = [{"op": "newSession"}]
        for event in kept[0].events:
            if event.type == "user/message" and (event.data.get("source") or {}).get("kind") == "user":
                text = "".join(str(b.get("text", "")) for b in event.data.get("content") or ())
                steps.append({"op": "prompt", "text": text})
        files["input.json"] = jsonx.dumps({"steps": steps}) + b"\n"
    return files


def write_directory(directory: Path, sessions: Sequence[RecordedSession]) -> list[Path]:
    """Write :func:`directory_files` into ``directory``, each file atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in directory_files(sessions).items():
        write_file_atomic(directory / name, data)
        written.append(directory / name)
    return written

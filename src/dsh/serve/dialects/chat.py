"""Chat Completions (``POST /v1/chat/completions``): dsh serve's first dialect.

The request is read by :mod:`dsh.replay.wire_request`; the reply is recorded as dsh chunks
(``dsh.model.openai_wire.StreamTranslator``, a whole completion as the chunks it would
have streamed) and replayed rebuilt from them (:mod:`dsh.serve.wire_out`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dsh import jsonx
from dsh.errors import ModelError
from dsh.events.chunks import Chunk, Failure, Usage
from dsh.events.messages import Block, Message
from dsh.model.openai_wire import StreamTranslator
from dsh.model.sse import SseEvent
from dsh.replay.wire_request import ReadBody, read_body
from dsh.serve.calls import Settled
from dsh.serve.dialects.base import Call, CallRecorder, Chain, NotThisDialect, Parsed
from dsh.serve.dialects.wire import SSE, Timer
from dsh.serve.http import Reply, json_reply, openai_error
from dsh.serve.wire_out import completion, sse_events

_HTTP_CODE = re.compile(r"HTTP_(\d{3})")


def _usage(chunks: list[Chunk]) -> Usage | None:
    found = [c["usage"] for c in chunks if c["type"] == "usage"]
    return found[-1].copy() if found else None


class _Recorder:
    def __init__(self) -> None:
        self.timer = Timer()
        self.translator = StreamTranslator()
        self.failure: Failure | None = {"code": "STREAM_CLOSED", "message": "the stream ended without [DONE]"}

    def event(self, sse: SseEvent) -> None:
        if self.failure is not None and self.failure["code"] != "STREAM_CLOSED":
            return
        try:
            if sse.data == "[DONE]":
                self.timer.add(self.translator.end())
                self.failure = None
            elif sse.data:
                self.timer.add(self.translator.feed(jsonx.loads(sse.data)))
        except ModelError as exc:
            self.failure = {"code": exc.code, "message": str(exc)}
        except ValueError as exc:
            self.failure = {"code": "MALFORMED_RESPONSE", "message": f"not JSON: {exc}"}

    def whole(self, raw: bytes) -> None:
        try:
            document = jsonx.loads(raw)
        except ValueError:
            self.failure = {"code": "MALFORMED_RESPONSE", "message": "not JSON"}
            return
        try:
            self.timer.add(self.translator.feed(_as_frame(document)))
            self.timer.add(self.translator.end())
            self.failure = None
        except ModelError as exc:
            self.failure = {"code": exc.code, "message": str(exc)}

    def settle(self) -> Settled:
        wire = self.translator.usage
        chunks = self.timer.chunks
        return Settled(chunks, self.timer.dt, self.failure, _usage(chunks), dict(wire) if wire else None)


def _as_frame(document: Any) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` as the one frame that would have streamed it."""
    choices = document.get("choices") if isinstance(document, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    delta: dict[str, Any] = {k: message[k] for k in ("reasoning_content", "content") if message.get(k)}
    calls = message.get("tool_calls") or []
    if calls:
        delta["tool_calls"] = [{**call, "index": i} for i, call in enumerate(calls)]
    frame: dict[str, Any] = {
        "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}]
    }
    if isinstance(document, dict) and document.get("usage") is not None:
        frame["usage"] = document["usage"]
    return frame


def _visible_blocks(blocks: list[Block]) -> list[Block]:
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


class ChatDialect:
    name: str = "chat"
    paths: frozenset[str] = frozenset({"/v1/chat/completions", "/chat/completions"})
    upstream_path: str = "/chat/completions"
    forwarded: tuple[str, ...] = ("authorization", "content-type", "accept", "user-agent")

    def shape(self, message: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        return openai_error(message, kind, fields)

    def read(self, body: Mapping[str, Any], previous: Parsed | None, chain: Chain) -> Parsed | NotThisDialect:
        if "messages" not in body and "input" in body:
            return NotThisDialect(
                "this is a Responses API body (input, no messages): POST it to /v1/responses"
            )
        last = previous.state if previous is not None and isinstance(previous.state, ReadBody) else None
        read = read_body(body, last)
        return Parsed(read.request, bool(body.get("stream")), state=read)

    def recorder(self) -> CallRecorder:
        return _Recorder()

    def visible(self, reply: Message) -> Message:
        return {"role": "assistant", "content": _visible_blocks(list(reply.get("content") or []))}

    def answer(self, call: Call, speed: float) -> Reply:
        model = str(call.body.get("model", ""))
        failure = call.failure
        status = _HTTP_CODE.fullmatch(failure[0]) if failure is not None and not call.chunks else None
        if failure is not None and status is not None:  # a recorded HTTP error: the same status and body
            text = failure[1]
            try:
                jsonx.loads(text)
            except ValueError:
                return json_reply(int(status.group(1)), {"error": {"message": text, "code": failure[0]}})
            return Reply(int(status.group(1)), text.encode())
        if not call.parsed.streamed:
            if failure is not None:
                return json_reply(
                    500, {"error": {"message": failure[1], "type": "server_error", "code": failure[0]}}
                )
            done = completion(call.chunks, model=model, completion_id=call.reply_id)
            if call.recorded.wire_usage is not None:
                done["usage"] = call.recorded.wire_usage
            return json_reply(200, done)
        events = sse_events(
            call.chunks,
            call.recorded.gaps,
            model=model,
            completion_id=call.reply_id,
            failure=failure,
            usage=call.recorded.wire_usage,
        )
        if speed == 0:  # no pacing: the same SSE events in one write, with a length
            return Reply(200, b"".join(b"data: " + piece.payload + b"\n\n" for piece in events), SSE)
        return Reply(
            200,
            content_type=SSE,
            paced=[(piece.gap_ms / 1000 / speed, b"data: " + piece.payload + b"\n\n") for piece in events],
        )


CHAT = ChatDialect()

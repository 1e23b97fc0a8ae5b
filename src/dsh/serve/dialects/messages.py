"""The Anthropic Messages API (``POST /v1/messages``): Claude Code, the Claude Agent SDK and
every ``anthropic`` SDK user.

``system`` (a string or text blocks, joined) → system; each message's blocks → dsh blocks:
``text``; ``thinking`` → ``reasoning`` with its ``signature``; ``redacted_thinking`` →
``redacted-reasoning`` (its ``data``); ``tool_use`` → ``tool-call`` (``input`` as sorted
JSON text); ``image`` → an image block (base64 ``mediaType``/``data``, or ``url``); each
``tool_result`` of a user message its own tool-result message. A reply's content (streamed:
assembled from its ``content_block_*`` events) is read with the same rule, so a recorded
reply and the same blocks sent back compare equal. ``max_tokens`` and ``tool_choice`` are
checked; replies are kept and replayed as the exact events; errors in Anthropic's shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh.events.chunks import Failure, FinishKind
from dsh.events.messages import Message
from dsh.model import ModelRequest
from dsh.model.sse import SseEvent
from dsh.serve.calls import Settled
from dsh.serve.dialects.base import Call, CallRecorder, Chain, NotThisDialect, Parsed
from dsh.serve.dialects.messages_blocks import block, system_of, to_messages, tools_of, usage_of
from dsh.serve.dialects.wire import WireLog, block_chunks, cut, json_of, reusing, wire_reply
from dsh.serve.http import Reply

FINISH: dict[str, FinishKind] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "pause_turn": "stop",
    "refusal": "stop",
}
_CHAT_ROLES = frozenset({"system", "developer", "tool"})


def anthropic_error(message: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's error shape: ``{"type": "error", "error": {type, message, ...}}``."""
    return {"type": "error", "error": {"type": kind, "message": message, **fields}}


class _Recorder:
    def __init__(self) -> None:
        self.wire = WireLog("messages")
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json: dict[int, str] = {}
        self.done: list[int] = []
        self.usage: dict[str, Any] = {}
        self.stop: str | None = None
        self.ended = False
        self.failure: Failure | None = None

    def event(self, sse: SseEvent) -> None:
        self.wire.event(sse)
        data = json_of(sse.data)
        kind = sse.event or str(data.get("type", ""))
        index = data.get("index")
        if kind == "message_start":
            message = data.get("message") or {}
            self.usage.update(message.get("usage") or {})
        elif kind == "content_block_start" and type(index) is int:
            self.blocks[index] = dict(data.get("content_block") or {})
        elif kind == "content_block_delta" and index in self.blocks:
            self._delta(self.blocks[index], index, data.get("delta") or {})
        elif kind == "content_block_stop" and index in self.blocks:
            if index in self.json:
                self.blocks[index]["input"] = json_of(self.json.pop(index))
            self.done.append(index)
        elif kind == "message_delta":
            self.stop = (data.get("delta") or {}).get("stop_reason") or self.stop
            self.usage.update(data.get("usage") or {})
        elif kind == "message_stop":
            self.ended = True
        elif kind == "error":
            error = data.get("error") or {}
            self.failure = {
                "code": str(error.get("type") or "ERROR"),
                "message": str(error.get("message") or ""),
            }

    def _delta(self, target: dict[str, Any], index: int, delta: Mapping[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            target["text"] = str(target.get("text", "")) + str(delta.get("text", ""))
        elif kind == "thinking_delta":
            target["thinking"] = str(target.get("thinking", "")) + str(delta.get("thinking", ""))
        elif kind == "signature_delta":
            target["signature"] = str(target.get("signature", "")) + str(delta.get("signature", ""))
        elif kind == "input_json_delta":
            self.json[index] = self.json.get(index, "") + str(delta.get("partial_json", ""))

    def whole(self, raw: bytes) -> None:
        self.wire.whole(raw)
        document = json_of(raw.decode("utf-8", "replace"))
        content = document.get("content")
        for i, item in enumerate(content if isinstance(content, list) else []):
            self.blocks[i] = dict(item) if isinstance(item, Mapping) else {}
            self.done.append(i)
        self.usage.update(document.get("usage") or {})
        self.stop = document.get("stop_reason")
        self.ended = bool(document)

    def settle(self) -> Settled:
        blocks = [block(self.blocks[i]) for i in sorted(self.done)]
        failure = self.failure
        if failure is None and not self.ended:
            failure = cut("the stream ended without message_stop")
        usage = usage_of(self.usage) if self.usage else None
        finish = FINISH.get(str(self.stop), "stop") if failure is None else None
        return Settled(
            block_chunks(blocks, usage, finish),
            [],
            failure,
            usage,
            dict(self.usage) if self.usage else None,
            self.wire.record(),
        )


class MessagesDialect:
    name: str = "messages"
    paths: frozenset[str] = frozenset({"/v1/messages", "/messages"})
    upstream_path: str = "/messages"
    forwarded: tuple[str, ...] = (
        "authorization",
        "x-api-key",
        "anthropic-version",
        "anthropic-beta",
        "content-type",
        "accept",
        "user-agent",
    )

    def shape(self, message: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        return anthropic_error(message, kind, fields)

    def read(self, body: Mapping[str, Any], previous: Parsed | None, chain: Chain) -> Parsed | NotThisDialect:
        wire = body.get("messages")
        if not isinstance(wire, list):
            what = (
                "a Responses API body (input): POST it to /v1/responses"
                if "input" in body
                else "no messages list"
            )
            return NotThisDialect(f"not a Messages API body: {what}")
        for message in wire:
            if isinstance(message, Mapping) and (
                message.get("role") in _CHAT_ROLES or "tool_calls" in message
            ):
                return NotThisDialect(
                    "this is a Chat Completions body (a system, tool or tool_calls message): "
                    "POST it to /v1/chat/completions"
                )
        max_tokens = body.get("max_tokens")
        request = ModelRequest(
            session_id="",
            model=str(body.get("model", "")),
            messages=to_messages(wire),
            system=system_of(body.get("system")),
            tools=tools_of(body.get("tools")),
            max_tokens=max_tokens if type(max_tokens) is int else None,
        )
        checked = {"tool_choice": body["tool_choice"]} if "tool_choice" in body else {}
        return Parsed(reusing(previous, request), bool(body.get("stream")), checked)

    def recorder(self) -> CallRecorder:
        return _Recorder()

    def visible(self, reply: Message) -> Message:
        return {"role": "assistant", "content": list(reply.get("content") or []), "source": {"kind": "model"}}

    def answer(self, call: Call, speed: float) -> Reply:
        assert call.recorded.wire is not None
        return wire_reply(call.recorded.wire, speed)


MESSAGES = MessagesDialect()

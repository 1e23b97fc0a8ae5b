"""The OpenAI Responses API (``POST /v1/responses``): the Agents SDK's default model, Codex.

A body's ``input`` items become dsh messages: consecutive ``reasoning`` (summary text, the
``encrypted_content`` as the block's ``signature``), assistant ``message`` (one text block
per part) and ``function_call`` items one assistant message; ``function_call_output`` a
tool result; a user, system or developer ``message`` a user message (``input_text`` parts
as text, ``input_image`` as an image block by URL or file id). ``previous_response_id``
puts the history after that reply first (:data:`~dsh.serve.dialects.base.Chain`). A
reply's ``output`` is read with the same rule, so a recorded reply and the same items sent
back compare equal. ``instructions`` → system, ``max_output_tokens`` → ``max_tokens``,
``tool_choice`` is checked as sent. Replies are kept and replayed as the exact events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dsh.events.chunks import Failure, FinishKind
from dsh.events.messages import Message
from dsh.model import ModelRequest
from dsh.model.sse import SseEvent
from dsh.serve.calls import Settled
from dsh.serve.dialects.base import Call, CallRecorder, Chain, NotThisDialect, Parsed
from dsh.serve.dialects.responses_items import items_to_messages, tools_of, usage_of
from dsh.serve.dialects.wire import WireLog, block_chunks, cut, json_of, reusing, wire_reply
from dsh.serve.http import Reply, openai_error


class _Recorder:
    def __init__(self) -> None:
        self.wire = WireLog("responses")
        self.response_id: str | None = None
        self.items: list[object] = []
        self.final: Mapping[str, Any] | None = None
        self.failure: Failure | None = None

    def _response(self, response: object) -> None:
        if isinstance(response, Mapping) and isinstance(response.get("id"), str):
            self.response_id = response["id"]

    def event(self, sse: SseEvent) -> None:
        self.wire.event(sse)
        data = json_of(sse.data)
        kind = sse.event or str(data.get("type", ""))
        if kind in ("response.created", "response.in_progress"):
            self._response(data.get("response"))
        elif kind == "response.output_item.done":
            self.items.append(data.get("item"))
        elif kind in ("response.completed", "response.incomplete"):
            self._done(data.get("response"))
        elif kind == "response.failed":
            response = data.get("response")
            error = response.get("error") if isinstance(response, Mapping) else None
            error = error if isinstance(error, Mapping) else {}
            self.failure = {
                "code": str(error.get("code") or "RESPONSE_FAILED"),
                "message": str(error.get("message") or "the response failed"),
            }
        elif kind == "error":
            self.failure = {
                "code": str(data.get("code") or "ERROR"),
                "message": str(data.get("message") or ""),
            }

    def _done(self, response: object) -> None:
        self._response(response)
        self.final = response if isinstance(response, Mapping) else {}

    def whole(self, raw: bytes) -> None:
        self.wire.whole(raw)
        self._done(json_of(raw.decode("utf-8", "replace")))

    def settle(self) -> Settled:
        final = self.final
        output = final.get("output") if final is not None else None
        items = output if isinstance(output, list) and output else self.items
        messages = items_to_messages(items)
        blocks = [b for m in messages if m["role"] == "assistant" for b in m["content"]]
        usage = usage_of(final.get("usage")) if final is not None else None
        failure = self.failure
        if failure is None and final is None:
            failure = cut("the stream ended without response.completed")
        finish: FinishKind | None = None
        if failure is None and final is not None:
            details = final.get("incomplete_details")
            finish = "tool-calls" if any(b.get("type") == "tool-call" for b in blocks) else "stop"
            if final.get("status") == "incomplete" and isinstance(details, Mapping):
                finish = "max-tokens" if details.get("reason") == "max_output_tokens" else finish
        raw_usage = final.get("usage") if final is not None else None
        return Settled(
            block_chunks(blocks, usage, finish),
            [],
            failure,
            usage,
            dict(raw_usage) if isinstance(raw_usage, Mapping) else None,
            self.wire.record(response_id=self.response_id),
        )


class ResponsesDialect:
    name: str = "responses"
    paths: frozenset[str] = frozenset({"/v1/responses", "/responses"})
    upstream_path: str = "/responses"
    forwarded: tuple[str, ...] = (
        "authorization",
        "content-type",
        "accept",
        "user-agent",
        "openai-beta",
        "openai-organization",
        "openai-project",
    )

    def shape(self, message: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        return openai_error(message, kind, fields)

    def read(self, body: Mapping[str, Any], previous: Parsed | None, chain: Chain) -> Parsed | NotThisDialect:
        raw = body.get("input")
        if "messages" in body and raw is None:
            return NotThisDialect(
                "this is a Chat Completions or Messages body (messages, no input): "
                "POST it to /v1/chat/completions or /v1/messages"
            )
        if raw is not None and not isinstance(raw, str | list):
            return NotThisDialect("input must be a string or a list of items")
        items: list[object] = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw or [])
        previous_id = body.get("previous_response_id")
        prefix: Sequence[Message] = ()
        missing = None
        if isinstance(previous_id, str):
            known = chain.get(previous_id)
            prefix, missing = (known, None) if known is not None else ((), previous_id)
        instructions = body.get("instructions")
        max_tokens = body.get("max_output_tokens")
        request = ModelRequest(
            session_id="",
            model=str(body.get("model", "")),
            messages=[*prefix, *items_to_messages(items)],
            system=instructions if isinstance(instructions, str) else None,
            tools=tools_of(body.get("tools")),
            max_tokens=max_tokens if type(max_tokens) is int else None,
        )
        checked = {"tool_choice": body["tool_choice"]} if "tool_choice" in body else {}
        return Parsed(reusing(previous, request), bool(body.get("stream")), checked, missing=missing)

    def recorder(self) -> CallRecorder:
        return _Recorder()

    def visible(self, reply: Message) -> Message:
        return {"role": "assistant", "content": list(reply.get("content") or []), "source": {"kind": "model"}}

    def answer(self, call: Call, speed: float) -> Reply:
        assert call.recorded.wire is not None
        return wire_reply(call.recorded.wire, speed)


RESPONSES = ResponsesDialect()

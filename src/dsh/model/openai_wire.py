"""The Chat Completions wire mapping: logged history to a request body, stream chunks to ours.

Pure functions and one stateful translator, no I/O: :func:`request_body` builds the JSON
body from a :class:`~dsh.model.base.ModelRequest`; :class:`StreamTranslator` turns each
parsed ``chat.completion.chunk`` into harness chunks and, at ``[DONE]``, emits every
``block-end`` (in open order), ``usage`` and ``finish``. Wire problems raise
:class:`~dsh.errors.ModelError` with a classified code; the adapter turns it into an error
``finish``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from dsh.errors import ModelError
from dsh.events import chunks as ck
from dsh.events.assembler import assemble_block
from dsh.events.attachments import Attachment
from dsh.events.chunks import Chunk, Usage
from dsh.events.messages import Block, Message, ToolSpec, joined_text, text_block, tool_calls
from dsh.model.base import ModelRequest
from dsh.model.failures import classify_stream_error, error_text

NO_OUTPUT = "(no output)"
TOOL_IMAGES = "Attached image(s) from tool result:"
"""The text that opens the user message carrying a tool result's images (the original's)."""


IMAGE_OMITTED = "[image omitted: this model does not take images, or the image is no longer stored]"


def image_ids(blocks: Sequence[Block]) -> list[str]:
    """The attachment ids of the image blocks in ``blocks`` (tool results' content included)."""
    out: list[str] = []
    for block in blocks:
        if block.get("type") == "image":
            ref = block.get("attachment")
            if isinstance(ref, dict) and isinstance(ref.get("attachmentId"), str):
                out.append(ref["attachmentId"])
        elif block.get("type") == "tool-result":
            out.extend(image_ids([b for b in block.get("content") or () if isinstance(b, dict)]))
    return out


def _image_part(block: Block, images: Mapping[str, Attachment]) -> dict[str, Any]:
    ref = block.get("attachment")
    found = images.get(str(ref.get("attachmentId"))) if isinstance(ref, dict) else None
    if found is None:
        return {"type": "text", "text": IMAGE_OMITTED}
    url = f"data:{found.media_type};base64,{base64.b64encode(found.data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def _user_content(blocks: list[Block], images: Mapping[str, Attachment]) -> str | list[dict[str, Any]]:
    """A user message's content: the joined text, or parts when it holds images."""
    if not any(b.get("type") == "image" for b in blocks):
        return joined_text(blocks)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif block.get("type") == "image":
            parts.append(_image_part(block, images))
    return parts


def _blocks(message: Message) -> list[Block]:
    content: object = message.get("content")  # a client may send OpenAI's plain string
    if isinstance(content, str):
        return [text_block(content)]
    return [cast(Block, b) for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def wire_messages(
    system: str | None, messages: Sequence[Message], images: Mapping[str, Attachment] | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` array: system first, then the logged history mapped for the wire
    (:func:`wire_message`, each message on its own)."""
    images = images or {}
    out = _system_first(system)
    for message in messages:
        out += wire_message(message, images)
    return out


def _system_first(system: str | None) -> list[dict[str, Any]]:
    """The start of the ``messages`` array: the system prompt, when there is one."""
    return [{"role": "system", "content": system}] if system else []


def wire_message(message: Message, images: Mapping[str, Attachment]) -> list[dict[str, Any]]:
    """One logged message mapped for the wire: one wire message, or several for tool results.

    Tool results become ``role: "tool"`` messages (sent before any text of the same user
    message); assistant ``content`` is never null; ``reasoning_content`` is sent back for
    every assistant message that had reasoning. A user message with images is sent as
    parts (``image_url`` data URLs from ``images``); a tool result's images follow its
    ``tool`` messages in a user message opening with :data:`TOOL_IMAGES`, as the original.
    """
    role = message.get("role")
    content = message.get("content")
    if (role == "user" or role == "assistant") and type(content) is list and len(content) == 1:
        only = content[0]  # the common case, a plain text message: what the rules below give it
        if type(only) is dict and only.get("type") == "text":
            return [{"role": role, "content": str(only.get("text", ""))}]
    blocks = _blocks(message)
    if role == "assistant":
        return [_assistant(blocks)]
    if role == "system":
        return [{"role": "system", "content": joined_text(blocks)}]
    out: list[dict[str, Any]] = []
    results = [b for b in blocks if b.get("type") == "tool-result"]
    shown: list[Block] = []
    for result in results:
        content = [b for b in result.get("content") or () if isinstance(b, dict)]
        shown.extend(b for b in content if b.get("type") == "image")
        out.append(
            {
                "role": "tool",
                "tool_call_id": str(result.get("toolCallId", "")),
                "content": joined_text(content) or NO_OUTPUT,
            }
        )
    if shown:
        parts = [{"type": "text", "text": TOOL_IMAGES}, *(_image_part(b, images) for b in shown)]
        out.append({"role": "user", "content": parts})
    rest = [b for b in blocks if b.get("type") != "tool-result"]
    if rest or not results:
        out.append({"role": "user", "content": _user_content(rest, images)})
    return out


def _assistant(blocks: list[Block]) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": "assistant", "content": joined_text(blocks)}
    reasoning = joined_text(blocks, "reasoning")
    if reasoning:
        wire["reasoning_content"] = reasoning
    calls = tool_calls(blocks)
    if calls:
        wire["tool_calls"] = [
            {
                "id": str(call.get("id", "")),
                "type": "function",
                "function": {"name": str(call.get("name", "")), "arguments": str(call.get("arguments", ""))},
            }
            for call in calls
        ]
    return wire


class WireMemo:
    """The wire form of each message of the last request, for the next one to reuse.

    A call sends the whole history, and a long session's history is long: mapping the 33 k
    messages of a 100 k-event session took ~30 ms a request, the same messages each time. A
    message is reused when it is the very object mapped before (the log's messages are never
    changed in place; a compaction's summary is a new one; the memo holds each message it
    keeps, so no other object can take its id), and only while no image is sent:
    an image part is made from ``images``, which a request brings. What the last request did
    not send is dropped, so the memo holds one history at most.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: dict[int, tuple[Message, list[dict[str, Any]]]] = {}

    def wire_messages(
        self, system: str | None, messages: Sequence[Message], images: Mapping[str, Attachment] | None = None
    ) -> list[dict[str, Any]]:
        """What :func:`wire_messages` gives, the messages mapped before reused."""
        if images:
            self._kept = {}
            return wire_messages(system, messages, images)
        kept = self._kept
        fresh: dict[int, tuple[Message, list[dict[str, Any]]]] = {}
        out = _system_first(system)
        empty: Mapping[str, Attachment] = {}
        for message in messages:
            entry = kept.get(id(message))  # the memo holds each message it mapped: its id is that one's
            if entry is None:
                entry = (message, wire_message(message, empty))
            fresh[id(message)] = entry
            out += entry[1]
        self._kept = fresh
        return out


def wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]


def request_body(
    request: ModelRequest,
    model: str,
    extra_body: Mapping[str, Any] | None = None,
    *,
    memo: WireMemo | None = None,
) -> dict[str, Any]:
    """The full JSON body; ``extra_body`` fields are added but never replace ours. ``memo``:
    the messages mapped for the request before are not mapped again."""
    body: dict[str, Any] = dict(extra_body or {})
    mapped = (
        wire_messages(request.system, request.messages, request.images)
        if memo is None
        else memo.wire_messages(request.system, request.messages, request.images)
    )
    body.update(
        {
            "model": model,
            "messages": mapped,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    )
    if request.tools:
        body["tools"] = wire_tools(request.tools)
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


def map_usage(wire: Mapping[str, Any]) -> Usage:
    """Wire usage to ours: cached prompt tokens move from ``inputTokens`` to ``cacheReadTokens``."""

    def count(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    prompt = count(wire.get("prompt_tokens")) or 0
    details = wire.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    if cached is None:
        cached = count(wire.get("prompt_cache_hit_tokens"))
    usage: Usage = {
        "inputTokens": max(0, prompt - (cached or 0)),
        "outputTokens": count(wire.get("completion_tokens")) or 0,
    }
    if cached is not None:
        usage["cacheReadTokens"] = cached
    out_details = wire.get("completion_tokens_details")
    reasoning = count(out_details.get("reasoning_tokens")) if isinstance(out_details, Mapping) else None
    if reasoning is not None:
        usage["reasoningTokens"] = reasoning
    return usage


FINISH_KINDS: dict[str, ck.FinishKind] = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}


@dataclass(slots=True)
class _Block:
    index: int
    block_type: str
    parts: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""

    def assembled(self) -> Block:
        return assemble_block(self.block_type, self.index, self.parts, self.call_id, self.name)


def _malformed(what: str) -> ModelError:
    return ModelError(
        "MALFORMED_RESPONSE", f"the provider sent a chunk that is not a completion chunk: {what}"
    )


def _opt_str(value: object, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _malformed(f"{what} is {type(value).__name__}, not a string")


class StreamTranslator:
    """Feed parsed wire chunks in order, then call :meth:`end` at ``[DONE]``.

    One reasoning block, one text block and one block per wire ``tool_calls[].index``;
    harness indexes in first-seen order; within a delta: reasoning, content, tool calls.
    ``finish_reason`` and the latest usage are held back until :meth:`end`.
    """

    __slots__ = ("_blocks", "_calls", "_reasoning", "_text", "finish_reason", "usage")

    def __init__(self) -> None:
        self._blocks: list[_Block] = []
        self._reasoning: _Block | None = None
        self._text: _Block | None = None
        self._calls: dict[int, _Block] = {}
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None

    def _open(self, block_type: str, out: list[Chunk]) -> _Block:
        block = _Block(len(self._blocks), block_type)
        self._blocks.append(block)
        out.append(ck.block_start(block.index, block_type))
        return block

    def feed(self, payload: object) -> list[Chunk]:
        """The harness chunks for one parsed ``data:`` payload."""
        if not isinstance(payload, Mapping):
            raise _malformed(f"expected a JSON object, got {type(payload).__name__}")
        error = payload.get("error")
        if error is not None:
            fields = error if isinstance(error, Mapping) else {"message": str(error)}
            code = classify_stream_error(fields)
            raise ModelError(code, f"provider error in stream: {error_text(fields) or 'no message'}")
        choices = payload.get("choices")
        if not isinstance(choices, list):
            raise _malformed("no 'choices' list")
        usage = payload.get("usage")
        if isinstance(usage, Mapping):
            self.usage = usage
        elif usage is not None:
            raise _malformed("'usage' is not an object")
        out: list[Chunk] = []
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise _malformed("a choice is not an object")
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if not isinstance(delta, Mapping):
                raise _malformed("'delta' is not an object")
            self._delta(delta, out)
            reason = _opt_str(choice.get("finish_reason"), "finish_reason")
            if reason:
                self.finish_reason = reason
        return out

    def _delta(self, delta: Mapping[str, Any], out: list[Chunk]) -> None:
        reasoning = _opt_str(delta.get("reasoning_content"), "reasoning_content")
        if reasoning is None:
            reasoning = _opt_str(delta.get("reasoning"), "reasoning")
        if reasoning:
            if self._reasoning is None:
                self._reasoning = self._open("reasoning", out)
            self._reasoning.parts.append(reasoning)
            out.append(ck.reasoning_delta(self._reasoning.index, reasoning))
        content = _opt_str(delta.get("content"), "content")
        if content:
            if self._text is None:
                self._text = self._open("text", out)
            self._text.parts.append(content)
            out.append(ck.text_delta(self._text.index, content))
        calls = delta.get("tool_calls")
        if calls is None:
            return
        if not isinstance(calls, list):
            raise _malformed("'tool_calls' is not a list")
        for position, call in enumerate(calls):
            if not isinstance(call, Mapping):
                raise _malformed("a tool call delta is not an object")
            self._tool_call(call, position, out)

    def _tool_call(self, call: Mapping[str, Any], position: int, out: list[Chunk]) -> None:
        wire_index = call.get("index", position)
        if not isinstance(wire_index, int):
            raise _malformed("a tool call 'index' is not an integer")
        function = call.get("function") or {}
        if not isinstance(function, Mapping):
            raise _malformed("a tool call 'function' is not an object")
        call_id = _opt_str(call.get("id"), "tool call id")
        name = _opt_str(function.get("name"), "tool call name")
        arguments = _opt_str(function.get("arguments"), "tool call arguments") or ""
        block = self._calls.get(wire_index)
        if block is None:
            block = self._calls[wire_index] = self._open("tool-call", out)
        if call_id and not block.call_id:
            block.call_id = call_id
        if name and not block.name:
            block.name = name
        block.parts.append(arguments)
        out.append(ck.tool_call_delta(block.index, block.call_id, block.name or None, arguments))

    def end(self) -> list[Chunk]:
        """At ``[DONE]``: every ``block-end`` in open order, then ``usage``, then ``finish``."""
        reason = self.finish_reason
        if reason is None:
            raise ModelError("STREAM_CLOSED", "the stream ended without a finish_reason")
        out = [ck.block_end(b.index, b.assembled()) for b in self._blocks]
        if self.usage is not None:
            out.append(ck.usage_chunk(map_usage(self.usage)))
        kind = FINISH_KINDS.get(reason)
        if kind is None:
            out.append(ck.error_finish(reason.upper(), f"model stopped: {reason}"))
        elif not self._blocks:
            out.append(ck.error_finish("EMPTY_RESPONSE", f"the model returned no content ({reason})"))
        else:
            out.append(ck.finish(kind))
        return out

"""Recorded chunks back to the Chat Completions wire: SSE events or one JSON completion.

The reverse of ``dsh.model.openai_wire.StreamTranslator``, in the shape providers send
(OpenAI style): a role chunk, one ``chat.completion.chunk`` per recorded delta (reasoning,
text, tool-call: ``id``/``type``/``name`` only on a call's first delta), a chunk carrying
``finish_reason``, a usage-only chunk (``choices: []``) when usage was recorded, then
``[DONE]``. ``block-start`` / ``block-end`` carry nothing a client sees. A recorded
failure (an error ``finish`` or a ``throw`` entry) ends the stream with an ``error`` event
and no ``[DONE]``, after the partial deltas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh import jsonx

RecordedChunk = Mapping[str, Any]
"""A chunk as a recording holds it, read leniently (a foreign recording may lack fields)."""

WIRE_FINISH = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}
CREATED = 1764470400


@dataclass(frozen=True, slots=True)
class WireEvent:
    """One SSE ``data:`` payload and the recorded gap (ms) before it."""

    payload: bytes
    gap_ms: int


def wire_usage(usage: dict[str, Any]) -> dict[str, Any]:
    cached = usage.get("cacheReadTokens")
    prompt = int(usage.get("inputTokens", 0)) + int(cached or 0)
    completion = int(usage.get("outputTokens", 0))
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}  # fmt: skip
    if cached is not None:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    if usage.get("reasoningTokens") is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage["reasoningTokens"]}
    return out


class _Calls:
    """Harness block index → wire ``tool_calls[].index`` (first-seen order)."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}

    def delta(self, chunk: RecordedChunk) -> dict[str, Any]:
        block = int(chunk.get("index", 0))
        first = block not in self.index
        if first:
            self.index[block] = len(self.index)
        wire: dict[str, Any] = {"index": self.index[block]}
        if first:
            wire.update(
                {"id": chunk.get("id", ""), "type": "function", "function": {"name": chunk.get("name")}}
            )
        wire.setdefault("function", {})["arguments"] = chunk.get("argumentsDelta", "")
        return {"tool_calls": [wire]}


def _delta(chunk: RecordedChunk, calls: _Calls) -> dict[str, Any] | None:
    kind = chunk.get("type")
    if kind == "text-delta":
        return {"content": chunk.get("text", "")}
    if kind == "reasoning-delta":
        return {"reasoning_content": chunk.get("text", "")}
    if kind == "tool-call-delta":
        return calls.delta(chunk)
    return None


_FINISH = b',"logprobs":null,"finish_reason":'
_OPEN = _FINISH + b"null}]}"
"""The end of a delta chunk that finishes nothing."""


class _Frames:
    """``chat.completion.chunk`` payloads of one call: the constant head and tail encoded once."""

    def __init__(self, completion_id: str, model: str) -> None:
        # The chunks were decoded from a log and the model from a request: already JSON.
        head = jsonx.dumps_unchecked({"id": completion_id, "object": "chat.completion.chunk",
                                      "created": CREATED, "model": model})  # fmt: skip
        self.head = head[:-1] + b',"choices":[{"index":0,"delta":'
        self.bare = head[:-1] + b',"choices":[]'

    def delta(self, delta: dict[str, Any], reason: str | None = None) -> bytes:
        tail = _OPEN if reason is None else _FINISH + jsonx.dumps_unchecked(reason) + b"}]}"
        return self.head + jsonx.dumps_unchecked(delta) + tail

    def usage(self, usage: dict[str, Any]) -> bytes:
        return self.bare + b',"usage":' + jsonx.dumps_unchecked(usage) + b"}"


def sse_events(
    chunks: Sequence[RecordedChunk],
    dt: Sequence[int],
    *,
    model: str,
    completion_id: str,
    failure: tuple[str, str] | None = None,
    usage: dict[str, Any] | None = None,
) -> list[WireEvent]:
    """The SSE payloads for one recorded call (``failure``: a ``throw`` entry's code and
    message; ``usage``: the provider's own usage object, instead of one rebuilt from ours)."""
    frames = _Frames(completion_id, model)
    out: list[WireEvent] = []
    gap = 0
    calls = _Calls()
    opened = False
    recorded_usage: dict[str, Any] | None = None
    finish: RecordedChunk | None = None
    for i, chunk in enumerate(chunks):
        gap += dt[i - 1] if 0 < i <= len(dt) else 0
        kind = chunk.get("type")
        if kind == "usage":
            recorded_usage = chunk.get("usage") or {}
            continue
        if kind == "finish":
            finish = chunk
            continue
        delta = _delta(chunk, calls)
        if delta is None:
            continue
        if not opened:
            opened = True
            role: dict[str, Any] = {"role": "assistant", "content": ""}
            if kind == "reasoning-delta":
                role = {"role": "assistant", "content": None, "reasoning_content": ""}
            out.append(WireEvent(frames.delta(role), gap))
            gap = 0
        out.append(WireEvent(frames.delta(delta), gap))
        gap = 0
    reason = finish.get("reason") if finish is not None else None
    kind = reason.get("kind") if isinstance(reason, dict) else None
    if failure is None and kind not in WIRE_FINISH:
        failure = (
            str(reason.get("code", "ERROR")) if isinstance(reason, dict) else "STREAM_CLOSED",
            str(reason.get("message", "recorded failure")) if isinstance(reason, dict) else "no finish",
        )
    if failure is not None:
        error = {"error": {"message": failure[1], "type": "server_error", "code": failure[0]}}
        out.append(WireEvent(jsonx.dumps_unchecked(error), gap))
        return out
    if not opened:
        out.append(WireEvent(frames.delta({"role": "assistant", "content": ""}), gap))
        gap = 0
    out.append(WireEvent(frames.delta({}, WIRE_FINISH[str(kind)]), gap))
    if recorded_usage is not None:
        out.append(WireEvent(frames.usage(usage if usage is not None else wire_usage(recorded_usage)), 0))
    out.append(WireEvent(b"[DONE]", 0))
    return out


def completion(chunks: Sequence[RecordedChunk], *, model: str, completion_id: str) -> dict[str, Any]:
    """One non-streamed ``chat.completion`` with the recorded call's assembled message."""
    text, reasoning = [], []
    calls: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] | None = None
    reason: Any = None
    for chunk in chunks:
        kind = chunk.get("type")
        if kind == "text-delta":
            text.append(str(chunk.get("text", "")))
        elif kind == "reasoning-delta":
            reasoning.append(str(chunk.get("text", "")))
        elif kind == "tool-call-delta":
            call = calls.setdefault(
                int(chunk.get("index", 0)),
                {
                    "id": chunk.get("id", ""),
                    "type": "function",
                    "function": {"name": chunk.get("name"), "arguments": ""},
                },
            )
            call["function"]["arguments"] += chunk.get("argumentsDelta", "")
            if chunk.get("id") and not call["id"]:
                call["id"] = chunk["id"]
        elif kind == "usage":
            usage = chunk.get("usage") or {}
        elif kind == "finish":
            reason = chunk.get("reason")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) if text or not calls else None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [calls[k] for k in sorted(calls)]
    kind = reason.get("kind") if isinstance(reason, dict) else None
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": WIRE_FINISH.get(str(kind), "stop")}],
    }  # fmt: skip
    if usage is not None:
        body["usage"] = wire_usage(usage)
    return body

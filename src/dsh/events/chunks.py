"""Stream chunks: the vocabulary a ``Model.stream`` yields, and the timed stream record.

A chunk is a tagged union of TypedDicts (:data:`Chunk`, tagged by ``type``): plain JSON
dicts, exactly what is logged and replayed, so ``chunk["type"] == "text-delta"`` narrows
it for the type checker. The constructors below keep field names and key order canonical;
:func:`as_chunk` is the one place a JSON value read back becomes a chunk.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypedDict

from dsh.events.messages import Block

CHUNK_TYPES: Final = frozenset(
    {"block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage", "finish"}
)

BlockType = Literal["text", "reasoning", "tool-call"]

FinishKind = Literal["stop", "tool-calls", "max-tokens", "error", "aborted"]

RETRYABLE_CODES: Final = frozenset(
    {
        "EMPTY_RESPONSE",
        "RATE_LIMIT",
        "OVERLOADED",
        "SERVER",
        "TIMEOUT",
        "CONNECTION",
        "TRANSPORT",
        "STREAM_CLOSED",
        "MALFORMED_RESPONSE",
    }
)
"""Failure codes the loop retries.

``TRANSPORT`` is the original's name for ``CONNECTION``; ``STREAM_CLOSED`` (the stream ended
without a finish reason or ``[DONE]``) and ``MALFORMED_RESPONSE`` (a chunk that is not valid
JSON / not a completion chunk) are transient transport faults, so they are retried too.
"""


class Usage(TypedDict, total=False):
    """Token usage; counts are disjoint (cached input is not in ``inputTokens``)."""

    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    reasoningTokens: int


class Failure(TypedDict):
    """A classified model-call failure."""

    code: str
    message: str


class BlockStart(TypedDict):
    """``block-start``: block ``index`` opens (its type: text, reasoning or tool-call)."""

    type: Literal["block-start"]
    index: int
    blockType: str


class TextDeltaChunk(TypedDict):
    """``text-delta``: more text of block ``index``."""

    type: Literal["text-delta"]
    index: int
    text: str


class ReasoningDeltaChunk(TypedDict):
    """``reasoning-delta``: more reasoning of block ``index``."""

    type: Literal["reasoning-delta"]
    index: int
    text: str


class ToolCallDelta(TypedDict):
    """``tool-call-delta``: the call id, its name (first delta) and more argument text."""

    type: Literal["tool-call-delta"]
    index: int
    id: str
    name: NotRequired[str]
    argumentsDelta: str


class BlockEnd(TypedDict):
    """``block-end``: block ``index`` is complete; ``block`` is authoritative."""

    type: Literal["block-end"]
    index: int
    block: Block


class UsageChunk(TypedDict):
    """``usage``: the call's token usage."""

    type: Literal["usage"]
    usage: Usage


class FinishReason(TypedDict):
    """Why a model call ended; ``failure`` for ``error`` / ``aborted``."""

    kind: FinishKind
    failure: NotRequired[Failure]


class Finish(TypedDict):
    """``finish``: the call ended."""

    type: Literal["finish"]
    reason: FinishReason


Chunk = BlockStart | TextDeltaChunk | ReasoningDeltaChunk | ToolCallDelta | BlockEnd | UsageChunk | Finish
"""One stream chunk (tagged by ``type``): exactly what is logged and replayed."""


def block_start(index: int, block_type: str) -> Chunk:
    return {"type": "block-start", "index": index, "blockType": block_type}


def text_delta(index: int, text: str) -> Chunk:
    return {"type": "text-delta", "index": index, "text": text}


def reasoning_delta(index: int, text: str) -> Chunk:
    return {"type": "reasoning-delta", "index": index, "text": text}


def tool_call_delta(index: int, call_id: str, name: str | None, arguments_delta: str) -> Chunk:
    if name is None:
        return {"type": "tool-call-delta", "index": index, "id": call_id, "argumentsDelta": arguments_delta}
    return {
        "type": "tool-call-delta",
        "index": index,
        "id": call_id,
        "name": name,
        "argumentsDelta": arguments_delta,
    }


def block_end(index: int, block: Block) -> Chunk:
    return {"type": "block-end", "index": index, "block": block}


def usage_chunk(usage: Usage) -> Chunk:
    return {"type": "usage", "usage": Usage(**usage)}


def finish(kind: FinishKind, failure: Failure | None = None) -> Chunk:
    if failure is None:
        return {"type": "finish", "reason": {"kind": kind}}
    return {
        "type": "finish",
        "reason": {"kind": kind, "failure": {"code": failure["code"], "message": failure["message"]}},
    }


def error_finish(code: str, message: str) -> Chunk:
    return finish("error", {"code": code, "message": message})


def finish_failure(chunk: Chunk) -> Failure | None:
    """The failure of an ``error``/``aborted`` finish chunk, else ``None`` (a recorded finish
    may lack the failure's fields: ``UNKNOWN`` / ``model call failed``)."""
    if chunk["type"] != "finish" or chunk["reason"].get("kind") not in ("error", "aborted"):
        return None
    failure: dict[str, Any] = dict(chunk["reason"].get("failure") or {})
    return {
        "code": str(failure.get("code", "UNKNOWN")),
        "message": str(failure.get("message", "model call failed")),
    }


def as_chunk(value: object) -> Chunk | None:
    """A JSON value read back (a recording, a script) as a chunk when its ``type`` is one of
    :data:`CHUNK_TYPES`, else ``None`` — the one place wire data becomes a :data:`Chunk`
    (recorded fields are kept as they are)."""
    if isinstance(value, dict) and value.get("type") in CHUNK_TYPES:
        return value  # type: ignore[return-value]
    return None


def is_retryable(code: str) -> bool:
    return code in RETRYABLE_CODES


class StreamRecord(TypedDict):
    """The compact timed record of every chunk one model call yielded."""

    chunks: list[Chunk]
    dt: list[int]

"""Stream chunks: the vocabulary a ``Model.stream`` yields, and the timed stream record.

Chunks are plain JSON dicts (exactly what is logged and replayed), built by the
constructors below so field names and key order stay canonical.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypedDict

Chunk = dict[str, Any]
"""One stream chunk: a dict whose ``type`` is one of :data:`CHUNK_TYPES`."""

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
    reasoningTokens: int


class Failure(TypedDict):
    """A classified model-call failure."""

    code: str
    message: str


def block_start(index: int, block_type: str) -> Chunk:
    return {"type": "block-start", "index": index, "blockType": block_type}


def text_delta(index: int, text: str) -> Chunk:
    return {"type": "text-delta", "index": index, "text": text}


def reasoning_delta(index: int, text: str) -> Chunk:
    return {"type": "reasoning-delta", "index": index, "text": text}


def tool_call_delta(index: int, call_id: str, name: str | None, arguments_delta: str) -> Chunk:
    chunk: Chunk = {"type": "tool-call-delta", "index": index, "id": call_id}
    if name is not None:
        chunk["name"] = name
    chunk["argumentsDelta"] = arguments_delta
    return chunk


def block_end(index: int, block: dict[str, Any]) -> Chunk:
    return {"type": "block-end", "index": index, "block": block}


def usage_chunk(usage: Usage) -> Chunk:
    return {"type": "usage", "usage": dict(usage)}


def finish(kind: FinishKind, failure: Failure | None = None) -> Chunk:
    reason: dict[str, Any] = {"kind": kind}
    if failure is not None:
        reason["failure"] = {"code": failure["code"], "message": failure["message"]}
    return {"type": "finish", "reason": reason}


def error_finish(code: str, message: str) -> Chunk:
    return finish("error", {"code": code, "message": message})


def finish_failure(chunk: Chunk) -> Failure | None:
    """The failure of an ``error``/``aborted`` finish chunk, else ``None``."""
    reason = chunk.get("reason") or {}
    if reason.get("kind") not in ("error", "aborted"):
        return None
    failure = reason.get("failure") or {}
    return {
        "code": str(failure.get("code", "UNKNOWN")),
        "message": str(failure.get("message", "model call failed")),
    }


def is_retryable(code: str) -> bool:
    return code in RETRYABLE_CODES


class StreamRecord(TypedDict):
    """The compact timed record of every chunk one model call yielded."""

    chunks: list[Chunk]
    dt: list[int]

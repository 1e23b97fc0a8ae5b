"""What the dialects share: timing chunks, recording an exact event stream, and sending
one back (:func:`wire_reply`), and dsh chunks rebuilt from a settled reply's blocks."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dsh import jsonx
from dsh.events.chunks import Chunk, Failure, FinishKind, Usage
from dsh.events.messages import Block
from dsh.events.payloads import WireRecord
from dsh.model import ModelRequest
from dsh.model.sse import SseEvent
from dsh.serve.dialects.base import Parsed
from dsh.serve.http import Reply

SSE = "text/event-stream; charset=utf-8"
BLOCK_KINDS = {"text": "text", "reasoning": "reasoning", "tool-call": "tool-call"}


def _ms_since(last: int) -> int:
    return (time.monotonic_ns() - last) // 1_000_000


class Timer:
    """Gaps in ms between consecutive chunks, as the loop records them."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.dt: list[int] = []
        self._last = 0

    def add(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            now = time.monotonic_ns()
            if self.chunks:
                self.dt.append((now - self._last) // 1_000_000)
            self._last = now
            self.chunks.append(chunk)


class WireLog:
    """A dialect's reply as received: each event's name and raw data, and the gap before it."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.events: list[list[str]] = []
        self.dt: list[int] = []
        self.streamed = True
        self._last = 0

    def event(self, sse: SseEvent) -> None:
        if self.events:
            self.dt.append(_ms_since(self._last))
        self._last = time.monotonic_ns()
        self.events.append([sse.event, sse.data])

    def whole(self, raw: bytes) -> None:
        self.streamed = False
        self.events = [["", raw.decode("utf-8", "replace")]]

    def record(
        self, status: int = 200, response_id: str | None = None, request: dict[str, Any] | None = None
    ) -> WireRecord:
        out: WireRecord = {
            "dialect": self.dialect,
            "status": status,
            "streamed": self.streamed,
            "events": self.events,
            "dt": self.dt,
        }
        if response_id:
            out["responseId"] = response_id
        if request:
            out["request"] = request
        return out


def wire_reply(wire: WireRecord, speed: float) -> Reply:
    """The recorded reply, byte for byte as the client parses it: the same status and body,
    or the same SSE events (names, data, order) at the recorded gaps / ``speed`` (0: at once)."""
    events = wire["events"]
    if not wire.get("streamed"):
        return Reply(int(wire.get("status", 200)), events[0][1].encode() if events else b"")
    pieces = [
        (f"event: {name}\ndata: {data}\n\n" if name else f"data: {data}\n\n").encode()
        for name, data in events
    ]
    if speed == 0:
        return Reply(200, b"".join(pieces), SSE)
    dt = wire.get("dt") or []
    gaps = [0.0, *(d / 1000 / speed for d in dt)]
    return Reply(
        200, content_type=SSE, paced=[(gaps[i] if i < len(gaps) else 0.0, p) for i, p in enumerate(pieces)]
    )


def reusing(previous: Parsed | None, request: ModelRequest) -> ModelRequest:
    """``request`` with the messages it starts with and the tools equal to ``previous``'s
    given as ``previous``'s own objects: the check skips what it compared at the last call
    (the same objects, in order), so a long session costs only what each request adds."""
    if previous is None:
        return request
    old = previous.request
    messages = list(request.messages)
    for i, (new, was) in enumerate(zip(messages, old.messages, strict=False)):
        if new != was:
            break
        messages[i] = was
    tools = old.tools if request.tools == old.tools else request.tools
    return replace(request, messages=messages, tools=tools)


def json_of(data: str) -> dict[str, Any]:
    """An event's data as a JSON object (``{}`` when it is not one)."""
    try:
        value = jsonx.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def block_chunks(blocks: Sequence[Block], usage: Usage | None, finish: FinishKind | None) -> list[Chunk]:
    """dsh chunks for a reply known by its blocks: per block its start, one delta and its end;
    the usage; the finish (``None``: none, a cut stream)."""
    out: list[Chunk] = []
    for i, block in enumerate(blocks):
        kind = str(block.get("type", ""))
        out.append({"type": "block-start", "index": i, "blockType": BLOCK_KINDS.get(kind, kind)})
        if kind == "text" and block.get("text"):
            out.append({"type": "text-delta", "index": i, "text": str(block.get("text"))})
        elif kind == "reasoning" and block.get("text"):
            out.append({"type": "reasoning-delta", "index": i, "text": str(block.get("text"))})
        elif kind == "tool-call":
            out.append(
                {
                    "type": "tool-call-delta",
                    "index": i,
                    "id": str(block.get("id", "")),
                    "name": str(block.get("name", "")),
                    "argumentsDelta": str(block.get("arguments", "")),
                }
            )
        out.append({"type": "block-end", "index": i, "block": block})
    if usage is not None:
        out.append({"type": "usage", "usage": usage})
    if finish is not None:
        out.append({"type": "finish", "reason": {"kind": finish}})
    return out


def cut(message: str) -> Failure:
    return {"code": "STREAM_CLOSED", "message": message}

"""What one proxied call is, on each side of ``dsh serve``: :class:`Settled` (record: what the
upstream produced) and :class:`RecordedReply` (replay: what the recording holds for it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dsh.events import Event
from dsh.events.chunks import Chunk, Failure, Usage
from dsh.events.messages import Message
from dsh.events.payloads import WireRecord, message_of, stream_of, wire_of, wire_usage_of


@dataclass(slots=True)
class Settled:
    """What one proxied call produced: its chunks and gaps, and a failure if it failed."""

    chunks: list[Chunk]
    dt: list[int]
    failure: Failure | None = None
    usage: Usage | None = None
    wire_usage: dict[str, Any] | None = None
    """The provider's own usage object, kept so a replay shows the client the same one."""
    wire: WireRecord | None = None
    """The reply exactly as the dialect sent it (every dialect but Chat Completions, whose
    SSE a replay rebuilds from the chunks)."""


@dataclass(frozen=True, slots=True)
class RecordedReply:
    """One recorded call's reply as a replay serves it."""

    gaps: Sequence[int]
    """The recorded ms gaps between its chunks (Chat Completions pacing)."""
    wire_usage: dict[str, Any] | None
    wire: WireRecord | None
    message: Message | None
    """The assistant message it settled with (``None``: a failed attempt)."""


def recorded_replies(events: Sequence[Event], calls: int) -> list[RecordedReply]:
    """Per call, in order: what its settlement logged (empty records when the log's
    settlements do not line up with its calls, as in a version-0 log)."""
    found = []
    for event in events:
        stream = stream_of(event)
        if stream is None:
            continue
        found.append(RecordedReply(stream["dt"], wire_usage_of(event), wire_of(event), message_of(event)))
    if len(found) == calls:
        return found
    return [RecordedReply((), None, None, None) for _ in range(calls)]

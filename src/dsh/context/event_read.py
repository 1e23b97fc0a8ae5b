"""``session_event_read``: one full event of the session's own log and its neighbours' summaries.

The original's schema, errors and result text: ``Session <id> — <title>``, ``Target event seq
<n>:``, the stored envelope pretty-printed (2-space indent, keys ``type, seq, time, data``
then ``sourceEventSeqs``, ``surfaceOp``) in a json fence, then ``Before:`` / ``After:`` with
``- seq N | <type> | <ISO time>`` and the event's text (or ``(no semantic text)``). A long
result spills like any other (the registry's rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final, cast

from pydantic import Field

from dsh import jsonx
from dsh.context.titles import latest_title
from dsh.events import Event
from dsh.events.messages import Message, joined_text
from dsh.events.payloads import blocks_of, message_of
from dsh.events.vocabulary import USER_MESSAGE
from dsh.tools.base import Tool, ToolContext, ToolOutput
from dsh.tools.codes import tool_error
from dsh.tools.schema import Number, ToolArgs

MAX_WINDOW: Final = 50
INVALID_FILTER: Final = "SESSION_QUERY_INVALID_FILTER"
NOT_FOUND: Final = "SESSION_QUERY_EVENT_NOT_FOUND"
FAILED: Final = "SESSION_QUERY_TOOL_FAILED"
UNAUTHORIZED: Final = "SESSION_QUERY_TOOL_UNAUTHORIZED"
SAFE: Final = 2**53 - 1


class EventReadArgs(ToolArgs):
    session_id: str | None = Field(None, description="Target session id. Omit for the current session.")
    seq: Number = Field(description="Target event sequence number.", json_schema_extra={"type": "integer"})
    before: Number | None = Field(
        None,
        description="Number of preceding raw events to summarize. Omit for none.",
        json_schema_extra={"type": "integer"},
    )
    after: Number | None = Field(
        None,
        description="Number of following raw events to summarize. Omit for none.",
        json_schema_extra={"type": "integer"},
    )


def _count(value: float | None, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or value != int(value) or not 0 <= value <= SAFE:
        raise tool_error(f"{name} must be a non-negative safe integer", INVALID_FILTER)
    return int(value)


def iso(ms: int) -> str:
    """``Date.toISOString()``: ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    at = datetime.fromtimestamp(ms / 1000, UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _text(event: Event) -> str:
    message = cast(Message, event.data) if event.type == USER_MESSAGE else message_of(event)
    if not isinstance(message, dict):
        return ""
    parts = []
    for block in blocks_of(message):
        if block.get("type") == "tool-result" and isinstance(block.get("content"), list):
            parts.append(joined_text(block["content"]))
        elif block.get("type") == "tool-call":
            parts.append(f"{block.get('name')} {block.get('arguments')}")
    return "\n".join(p for p in [joined_text(blocks_of(message)), *parts] if p)


def _summary(event: Event) -> str:
    head = f"- seq {event.seq} | {event.type} | {iso(event.time)}"
    text = _text(event)
    return f"{head} | (no semantic text)" if not text else head + "\n  " + text.replace("\n", "\n  ")


def render(session_id: str, events: Sequence[Event], seq: int, before: int, after: int) -> str:
    by_seq = {e.seq: e for e in events}
    target = by_seq.get(seq)
    if target is None:
        raise tool_error("session event was not found", NOT_FOUND)
    title = latest_title(events) or "untitled"
    lines = [f"Session {session_id} — {title}", f"Target event seq {seq}:", "```json"]
    lines += [jsonx.dumps_pretty(target.to_wire()), "```"]
    for label, seqs in (("Before:", range(seq - before, seq)), ("After:", range(seq + 1, seq + 1 + after))):
        found = [by_seq[s] for s in seqs if s in by_seq]
        if found:
            lines += ["", label, *map(_summary, found)]
    return "\n".join(lines)


class SessionEventReadTool(Tool[EventReadArgs]):
    """Read one event of the calling session's log."""

    name = "session_event_read"
    description = (
        "Read one full unabridged event and optional neighboring raw-event summaries from an "
        "authorized session."
    )
    args_model = EventReadArgs
    concurrency_safe = True

    async def call(self, args: EventReadArgs, ctx: ToolContext) -> ToolOutput:
        seq = _count(args.seq, "seq")
        before, after = _count(args.before, "before"), _count(args.after, "after")
        agent = ctx.agent
        if agent is None:
            raise tool_error("session query tools require an agent-bound caller", UNAUTHORIZED)
        target = args.session_id if args.session_id else agent.id
        if target != agent.id:
            raise tool_error("session was not found", "SESSION_QUERY_SESSION_NOT_FOUND")
        if before > MAX_WINDOW or after > MAX_WINDOW:
            raise tool_error("session event window is invalid", "SESSION_QUERY_INVALID_WINDOW")
        return ToolOutput.text(render(target, agent.own_events, seq, before, after))

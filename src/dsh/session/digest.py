"""What a session's events say beyond its header: title, first prompt, model, status, kind.

Pure functions of one session's events, shared by ``dsh sessions list`` and the viewer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dsh.events import Event, SessionHeader
from dsh.events.descriptor import SubagentDescriptor, descriptor_kind, parse_descriptor
from dsh.events.messages import joined_text
from dsh.events.payloads import request_header_of, turn_end_kind
from dsh.events.vocabulary import (
    REQUEST_HEADER,
    SESSION_TITLE,
    SUBAGENT_DESCRIPTOR,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)

TITLE_LIMIT = 80
RUNNING_WINDOW_MS = 5 * 60 * 1000
"""An open turn whose last event is younger than this is ``running``; older is ``interrupted``."""

Status = Literal["running", "completed", "interrupted", "error", "empty"]
_END_STATUS: dict[str, Status] = {
    "completed": "completed",
    "max-tokens": "completed",
    "blocked": "completed",
    "error": "error",
    "aborted": "interrupted",
    "interrupted": "interrupted",
}


def shorten(text: str, limit: int = TITLE_LIMIT) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def is_prompt(event: Event) -> bool:
    """Whether ``event`` is a prompt a person typed (a ``user/message`` from the user)."""
    return (
        event.type == USER_MESSAGE
        and isinstance(event.data, dict)
        and isinstance(event.data.get("source"), dict)
        and event.data["source"].get("kind") == "user"
    )


def text_of(data: Mapping[str, Any]) -> str:
    """The joined text blocks of a message's ``content`` ("" when it has none)."""
    content = data.get("content")
    return joined_text(content) if isinstance(content, list) else ""


@dataclass(frozen=True, slots=True)
class Derived:
    """What one session's events say beyond its header."""

    title: str
    first_prompt: str
    model: str | None
    last_activity: int | None
    status: Status
    kind: str | None
    label: str | None
    call_id: str | None


def derive(header: SessionHeader, events: Sequence[Event], cut: int, *, now_ms: int | None = None) -> Derived:
    """Title, first prompt, model, last activity, status and kind of one session."""
    title: str | None = None
    first_own: str | None = None
    first_any: str | None = None
    model: str | None = None
    open_turns = 0
    last_reason: str | None = None
    descriptor: SubagentDescriptor | None = None
    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        etype = event.type
        if etype == SESSION_TITLE and isinstance(data.get("title"), str):
            title = data["title"]
        elif is_prompt(event):
            text = text_of(data)
            if first_any is None:
                first_any = text
            if first_own is None and event.seq >= cut:
                first_own = text
        elif etype == REQUEST_HEADER:
            config = (request_header_of(event) or {}).get("config")
            if isinstance(config, dict) and isinstance(config.get("model"), str):
                model = config["model"]
        elif etype == TURN_START:
            open_turns += 1
        elif etype == TURN_END:
            open_turns = max(open_turns - 1, 0)
            last_reason = turn_end_kind(event)
        elif etype == SUBAGENT_DESCRIPTOR and event.seq >= cut and descriptor is None:
            descriptor = parse_descriptor(event)
    prompt = first_own if first_own is not None else (first_any or "")
    last = events[-1].time if events else None
    status: Status
    if open_turns:
        now = now_ms if now_ms is not None else int(time.time() * 1000)
        status = "running" if last is not None and now - last < RUNNING_WINDOW_MS else "interrupted"
    elif last_reason is not None:
        status = _END_STATUS.get(last_reason, "completed")
    else:
        status = "empty"
    return Derived(
        title=shorten(title) if title else (shorten(prompt) if prompt else header.id),
        first_prompt=prompt,
        model=model,
        last_activity=last,
        status=status,
        kind=descriptor_kind(header, descriptor),
        label=descriptor.label if descriptor is not None else None,
        call_id=descriptor.call_id if descriptor is not None else None,
    )


def session_json(header: SessionHeader, inherited_event_count: int, event_count: int) -> dict[str, Any]:
    """The stable JSON shape of one stored session (every key always present).

    ``id``, ``parentSession``, ``isSeeded``, ``inheritedEventCount``, ``eventCount``,
    ``createdAt``, ``cwd``, ``origin``, ``delegationDepth``, ``agentPreset``; absent
    optional header fields are ``null``.
    """
    return {
        "id": header.id,
        "parentSession": header.parent_session,
        "isSeeded": header.is_seeded,
        "inheritedEventCount": inherited_event_count,
        "eventCount": event_count,
        "createdAt": header.created_at,
        "cwd": header.cwd,
        "origin": header.origin,
        "delegationDepth": header.delegation_depth,
        "agentPreset": header.agent_preset,
    }

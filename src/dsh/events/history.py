"""The model-visible history of a log: which event contributes which message, and a typed view.

:func:`project_event` is the one rule (``dsh.session.HistoryProjector`` caches it for the
loop); :func:`history_messages` gives the same messages as frozen :class:`HistoryMessage`
values for readers — the wire dict stays available as ``raw``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh.events.envelope import Event
from dsh.events.messages import Message, joined_text
from dsh.events.payloads import blocks_of, message_of
from dsh.events.vocabulary import ASSISTANT_MESSAGE, USER_MESSAGE


def project_event(event: Event) -> Message | None:
    """The message an ``append`` surface event contributes, or ``None``."""
    if event.surface_op != "append":
        return None
    etype = event.type
    if etype == USER_MESSAGE:
        return event.data  # type: ignore[no-any-return]
    message = message_of(event)
    if message is not None and etype == ASSISTANT_MESSAGE and not message.get("content"):
        return None
    return message


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A tool call of an assistant message; ``arguments`` is the model's raw JSON text."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """A tool result the model saw: its text and whether it is an error."""

    call_id: str
    text: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class HistoryMessage:
    """One message of the model-visible history.

    ``source`` is who produced it (``user``, ``model``, ``tool``, or what a hook or the
    harness wrote); ``seq`` the event it came from; ``raw`` the message exactly as logged.
    """

    seq: int
    role: str
    source: str
    text: str
    reasoning: str
    tool_calls: tuple[ToolCallPart, ...]
    tool_results: tuple[ToolResultPart, ...]
    raw: Message


def _typed(seq: int, message: Message) -> HistoryMessage:
    blocks = blocks_of(message)
    source = message.get("source")
    calls = tuple(
        ToolCallPart(str(b.get("id", "")), str(b.get("name", "")), str(b.get("arguments", "")))
        for b in blocks
        if b.get("type") == "tool-call"
    )
    results = tuple(
        ToolResultPart(
            str(b.get("toolCallId", "")),
            joined_text(b["content"]) if isinstance(b.get("content"), list) else "",
            b.get("isError") is True,
        )
        for b in blocks
        if b.get("type") == "tool-result"
    )
    return HistoryMessage(
        seq=seq,
        role=str(message.get("role", "")),
        source=str(source.get("kind", "")) if isinstance(source, dict) else "",
        text=joined_text(blocks),
        reasoning=joined_text(blocks, "reasoning"),
        tool_calls=calls,
        tool_results=results,
        raw=message,
    )


def history_messages(events: Sequence[Event]) -> list[HistoryMessage]:
    """The model-visible history of ``events``, typed, in log order."""
    out: list[HistoryMessage] = []
    for event in events:
        message = project_event(event)
        if message is not None:
            out.append(_typed(event.seq, message))
    return out

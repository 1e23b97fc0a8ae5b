"""The model-visible history of a log: which event contributes which message, and a typed view.

The history is the *surface*: the surface events (``surfaceOp``) folded in log order, an
``append`` adding its node, a ``replace {start, end}`` (a compaction's checkpoint) taking
the nodes ``start..end`` — inclusive, by surface position — off and putting itself there.
:class:`Surface` is the one rule (``dsh.session.HistoryProjector`` feeds it incrementally
for the loop, replay derivation feeds it for what the recorded model saw);
:func:`history_messages` gives the same messages as frozen :class:`HistoryMessage` values
for readers — the wire dict stays available as ``raw``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsh.errors import InvalidEventError
from dsh.events.envelope import Event
from dsh.events.messages import Message, joined_text
from dsh.events.payloads import blocks_of, message_of
from dsh.events.vocabulary import ASSISTANT_MESSAGE, USER_MESSAGE


def event_message(event: Event) -> Message | None:
    """The message a surface event carries (an assistant message with no content: none)."""
    if event.type == USER_MESSAGE:
        return event.data  # type: ignore[no-any-return]
    message = message_of(event)
    if message is not None and event.type == ASSISTANT_MESSAGE and not message.get("content"):
        return None
    return message


def replaced_span(event: Event) -> tuple[int, int] | None:
    """``(start, end)`` of a ``surfaceOp`` replace, else ``None``."""
    op = event.surface_op
    if isinstance(op, dict) and op.get("op") == "replace":
        start, end = op.get("start"), op.get("end")
        if type(start) is int and type(end) is int:
            return start, end
        raise InvalidEventError(f"{event.type}#{event.seq}: surfaceOp replace needs integer start and end")
    return None


class Surface:
    """The surface nodes in order: each node's seq and message (``None``: a node that shows
    the model nothing, such as an empty assistant message). ``generation`` counts replaces."""

    __slots__ = ("generation", "messages", "seqs")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.messages: list[Message | None] = []
        self.generation = 0

    def feed(self, event: Event) -> bool:
        """Fold one event in; ``True`` when it changed the surface."""
        op = event.surface_op
        if op is None:
            return False
        if op == "append":
            self._append(event)
            return True
        return self._replace(event)

    def fold(self, events: Iterable[Event]) -> list[Message] | None:
        """Fold ``events`` in, in order: the messages their appends added (an empty node's
        none), or ``None`` when a replace changed the surface before (read :meth:`history`).
        The projection's hot path: one call for a run of events, not one per event."""
        added: list[Message] | None = []
        append = self._append
        for event in events:
            op = event.surface_op
            if op is None:
                continue
            if op == "append":
                message = append(event)
                if message is not None and added is not None:
                    added.append(message)
            elif self._replace(event):
                added = None
        return added

    def _append(self, event: Event) -> Message | None:
        """Add the node of an ``append``; its message (``None``: it shows the model nothing)."""
        message = event_message(event)
        self.seqs.append(event.seq)
        self.messages.append(message)
        return message

    def _replace(self, event: Event) -> bool:
        """Fold a replace in (``False``: the op is no replace, nothing changed)."""
        span = replaced_span(event)
        if span is None:
            return False
        first, last = self.position(span[0], event), self.position(span[1], event)
        if first > last:
            raise InvalidEventError(
                f"{event.type}#{event.seq}: surfaceOp replace start {span[0]} comes after end {span[1]}"
            )
        self.seqs[first : last + 1] = [event.seq]
        self.messages[first : last + 1] = [event_message(event)]
        self.generation += 1
        return True

    def feed_all(self, events: Iterable[Event]) -> Surface:
        for event in events:
            self.feed(event)
        return self

    def position(self, seq: int, event: Event | None = None) -> int:
        """Where node ``seq`` is on the surface."""
        try:
            return self.seqs.index(seq)
        except ValueError:
            where = f"{event.type}#{event.seq}: " if event is not None else ""
            raise InvalidEventError(f"{where}surfaceOp replace names seq {seq}, not on the surface") from None

    def history(self) -> list[Message]:
        """The model-visible messages, in surface order."""
        return [m for m in self.messages if m is not None]


def project_event(event: Event) -> Message | None:
    """The message an ``append`` surface event contributes, or ``None`` (a replace is not an
    append: :class:`Surface` places it)."""
    return event_message(event) if event.surface_op == "append" else None


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


def typed_message(seq: int, message: Message) -> HistoryMessage:
    """``message`` (the event ``seq``'s) as a :class:`HistoryMessage`."""
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
    """The model-visible history of ``events``, typed, in surface order."""
    surface = Surface().feed_all(events)
    return [
        typed_message(seq, m) for seq, m in zip(surface.seqs, surface.messages, strict=True) if m is not None
    ]

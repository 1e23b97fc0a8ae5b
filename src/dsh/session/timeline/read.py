"""Reading one event into items: the one place the read side digs into raw payloads.

Stateless: what an item needs from the rest of the session (the paired call, the child a
call started, whether the event is inherited) the caller — :class:`~.fold.Timeline` —
passes in. Lenient, as every reader of a stored log is (``dsh.events.payloads``).
"""

from __future__ import annotations

from typing import Any, cast

from dsh import jsonx
from dsh.events import Event
from dsh.events.compaction import CompactionSummaryData, bracket_of, is_checkpoint, summary_of, unframed
from dsh.events.history import event_message, typed_message
from dsh.events.messages import Block, Message, joined_text
from dsh.events.payloads import (
    assistant_blocks_of,
    message_of,
    request_header_of,
    tool_call_of,
    tool_result_of,
    turn_end_kind,
    usage_of,
)
from dsh.events.todos import todos_of
from dsh.events.tokens import message_price
from dsh.session.timeline.items import (
    Answer,
    Approval,
    Attempt,
    CallPart,
    Compaction,
    Hook,
    Part,
    Prompt,
    Relayed,
    Request,
    Step,
)


def data_of(event: Event) -> dict[str, Any]:
    """The event's payload object (``{}`` when it is not one)."""
    return event.data if isinstance(event.data, dict) else {}


def int_or_none(value: object) -> int | None:
    return value if type(value) is int else None


def str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def parse_arguments(raw: object) -> tuple[Any, bool]:
    """A call's arguments as JSON and whether they parsed (blank text is ``{}``; text that is
    not JSON comes back as itself, ``False``)."""
    if not isinstance(raw, str):
        return raw, True
    if not raw.strip():
        return {}, True
    try:
        return jsonx.loads(raw), True
    except jsonx.JSONDecodeError:
        return raw, False


def user_message(session: str, event: Event, inherited: bool) -> Prompt | Relayed:
    """A ``user/message``: the user's prompt, or a message relayed from ``source``."""
    data = data_of(event)
    source = data.get("source")
    kind = source.get("kind") if isinstance(source, dict) else None
    content = data.get("content")
    blocks = [cast(Block, b) for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    text = joined_text(blocks)
    if kind == "user":
        parts = tuple(str(b["text"]) for b in blocks if b.get("type") == "text" and b.get("text"))
        return Prompt(session, event, text, parts, str_or_none(data.get("id")), inherited)
    parts = tuple(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    return Relayed(session, event, kind if isinstance(kind, str) else "", text, parts, inherited)


def surface_message(event: Event) -> Message | None:
    """The message a surface event puts on the history (a checkpoint: its summary blocks,
    unframed — the framing is never shown)."""
    message = event_message(event)
    if message is not None and is_checkpoint(event):
        return cast(Message, {**message, "content": unframed(message)})
    return message


def compaction_started(event: Event) -> tuple[str, int | None] | None:
    """A ``compaction/start``'s compaction id and owner turn."""
    data = bracket_of(event)
    if data is None:
        return None
    return str(data.get("compactionId", "")), int_or_none(data.get("turn"))


def compaction_summary(event: Event) -> CompactionSummaryData | None:
    """A ``compaction/summary``'s data (``None``: not one a reader can use)."""
    return summary_of(event)


def checkpoint_id(event: Event) -> str | None:
    """The compaction id a checkpoint ``user/message`` names (``None``: not a checkpoint)."""
    if not is_checkpoint(event):
        return None
    source = data_of(event).get("source")
    return str_or_none(source.get("compactionId")) if isinstance(source, dict) else None


def compaction(
    session: str,
    event: Event,
    compaction_id: str,
    turn: int | None,
    summary: CompactionSummaryData | None,
    originals: list[tuple[int, Message | None]],
    turns: tuple[int, int] | None,
    inherited: bool,
) -> Compaction:
    """A checkpoint: ``summary`` its ``compaction/summary`` (``None``: not in the log — the
    summary text is then the checkpoint's own, unframed), ``originals`` the shadowed nodes."""
    if summary is not None:
        seqs = tuple(summary["shadowedSeqs"])
        text = joined_text([b for b in summary.get("summary", []) if isinstance(b, dict)])
        before = int_or_none(summary.get("shadowedTokenCount"))
    else:
        seqs = tuple(event.source_event_seqs[2:]) if event.source_event_seqs else ()
        text = joined_text(unframed(cast(Message, data_of(event))))
        before = None
    typed = tuple(typed_message(seq, m) for seq, m in originals if m is not None)
    return Compaction(
        session, event, compaction_id, turn, len(seqs), turns, before,
        message_price(cast(Message, data_of(event))), text, seqs, typed, None, inherited,
    )  # fmt: skip


def failed_compaction(session: str, event: Event, inherited: bool) -> Compaction | None:
    """A ``compaction/end`` with an ``error``: the attempt failed, the history is unchanged."""
    data = bracket_of(event)
    error = data.get("error") if data is not None else None
    if data is None or not isinstance(error, str):
        return None
    compaction_id = str(data.get("compactionId", ""))
    turn = int_or_none(data.get("turn"))
    return Compaction(session, event, compaction_id, turn, 0, None, None, None, "", (), (), error, inherited)


def request(session: str, event: Event, inherited: bool) -> Request:
    config = (request_header_of(event) or {}).get("config")
    config = config if isinstance(config, dict) else {}
    model, provider = str_or_none(config.get("model")), str_or_none(config.get("provider"))
    return Request(session, event, model, provider, str_or_none(data_of(event).get("reason")), inherited)


def turn_number(event: Event) -> int | None:
    """The ``turn`` number an event's payload names (``None``: it names none)."""
    return int_or_none(data_of(event).get("turn"))


def title_of(event: Event) -> str | None:
    """A ``session/title``'s title (``None``: not a string, no title)."""
    return str_or_none(data_of(event).get("title"))


def answer_text(event: Event) -> str:
    """An ``assistant/message``'s joined text (:attr:`Answer.text`)."""
    return joined_text(assistant_blocks_of(event) or [])


def answer(session: str, event: Event, inherited: bool) -> Answer:
    """An ``assistant/message``: joined text, its text and reasoning blocks in order, its calls."""
    blocks = assistant_blocks_of(event) or []
    parts: list[Part] = []
    calls: list[CallPart] = []
    for block in blocks:
        btype, text = block.get("type"), block.get("text")
        if btype == "tool-call":
            calls.append(
                CallPart(str(block.get("id", "")), str(block.get("name", "")), block.get("arguments"))
            )
        elif isinstance(text, str) and text and btype in ("text", "reasoning"):
            parts.append(Part("text" if btype == "text" else "reasoning", text))
    message: Message | dict[str, Any] = message_of(event) or {}
    return Answer(
        session,
        event,
        answer_text(event),
        tuple(parts),
        tuple(calls),
        usage_of(event),
        str_or_none(message.get("id")),
        turn_number(event),
        int_or_none(data_of(event).get("step")),
        data_of(event).get("interrupted") is True,
        inherited,
    )


def reasoning_text(event: Event) -> str:
    """The joined reasoning blocks of an ``assistant/message``."""
    return joined_text(assistant_blocks_of(event) or [], "reasoning")


def attempt(session: str, event: Event, inherited: bool) -> Attempt:
    data = data_of(event)
    failure = data.get("failure")
    failure = failure if isinstance(failure, dict) else {}
    return Attempt(
        session,
        event,
        failure.get("code"),
        failure.get("message"),
        usage_of(event),
        int_or_none(data.get("step")),
        inherited,
    )


def hook(session: str, event: Event, inherited: bool) -> Hook:
    data = data_of(event)
    return Hook(
        session,
        event,
        data.get("point"),
        data.get("handlerId"),
        data.get("decision"),
        data.get("exitCode"),
        data.get("durationMs"),
        data.get("stderrSummary"),
        inherited,
    )


def approval_asked(session: str, event: Event, inherited: bool) -> Approval:
    """An ``approval/asked``: the request id, the tool, its call and the reason when known."""
    data = data_of(event)
    return Approval(
        session, event, str(data.get("id", "")), str_or_none(data.get("toolName")),
        str_or_none(data.get("callId")), str_or_none(data.get("reason")), None, inherited,
    )  # fmt: skip


def approval_decided(session: str, event: Event, inherited: bool) -> Approval:
    """An ``approval/decided`` on its own (the fold pairs it with its question)."""
    data = data_of(event)
    outcome = str_or_none(data.get("outcome")) or ""
    return Approval(session, event, str(data.get("id", "")), None, None, None, outcome, inherited)


def step(session: str, event: Event, inherited: bool) -> Step:
    data = data_of(event)
    return Step(session, event, int_or_none(data.get("turn")), int_or_none(data.get("step")), inherited)


__all__ = [
    "answer",
    "approval_asked",
    "approval_decided",
    "attempt",
    "checkpoint_id",
    "compaction",
    "compaction_started",
    "compaction_summary",
    "data_of",
    "failed_compaction",
    "hook",
    "int_or_none",
    "parse_arguments",
    "reasoning_text",
    "request",
    "step",
    "str_or_none",
    "surface_message",
    "todos_of",
    "tool_call_of",
    "tool_result_of",
    "turn_end_kind",
    "user_message",
]

"""Content blocks and messages as logged (the model-visible history is made of these)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Required, TypedDict

from dsh.events.attachments import AttachmentRef
from dsh.ids import new_message_id


class Block(TypedDict, total=False):
    """A content block as logged. ``type`` names the kind: ``text`` and ``reasoning``
    carry ``text``; ``tool-call`` carries ``id``, ``name`` and ``arguments`` (the model's raw
    JSON text); ``tool-result`` carries ``toolCallId``, ``content`` and ``isError``;
    ``image`` carries ``attachment`` (the stored image's reference,
    ``dsh.events.attachments``; older dsh logs, and ``dsh serve`` recordings: ``mediaType``
    and ``data``, or ``url``); a ``reasoning`` block may carry the provider's ``signature``
    (Anthropic thinking, an OpenAI reasoning item's encrypted content). One lenient shape rather than a
    union, because recorded logs are read as they are: a kind dsh does not know, or a known
    kind missing a key, is kept and passed through byte-exact, never rejected."""

    type: Required[str]
    text: str
    id: str
    name: str
    arguments: str
    toolCallId: str
    content: list[Block]
    isError: bool
    mediaType: str
    data: str
    attachment: AttachmentRef
    signature: str
    url: str


class SnapshotSection(TypedDict):
    """One section of a runtime-context snapshot's source (``sandbox:policy``, ...)."""

    name: str
    text: str


class Source(TypedDict, total=False):
    """Who produced a message. ``kind`` names the producer: ``user``; ``model``
    (``provider``, ``model``); ``tool`` (``callId``); ``plugin`` (``plugin``, and ``form``,
    ``sections`` for a runtime-context snapshot, ``summary`` for a notice); ``coordinator``,
    ``subagent-report``, ``subagent-settled`` (``form``, ``senderSessionId``, ``summary``).
    Lenient like :class:`Block`: a recorded source with other kinds or keys is kept as is."""

    kind: Required[str]
    provider: str
    model: str
    callId: str
    plugin: str
    form: str
    sections: list[SnapshotSection]
    summary: str
    senderSessionId: str
    replayState: Any


class Message(TypedDict, total=False):
    """A logged message; its key order is the writer's (user, assistant and tool-result
    messages each have their own). ``source`` says who produced it; recorded messages may
    carry keys dsh does not read."""

    role: Required[str]
    content: Required[list[Block]]
    source: Source
    id: str


JOB_NOTICE_PLUGIN = "tool-jobs"
"""``source.plugin`` of a background job's completion notice (the original's plugin name)."""
JOB_NOTICE_SENDER = "plugin:tool-jobs"
"""The :func:`delivery_sender` of a background job's completion notice."""


def delivery_sender(message: object) -> str | None:
    """Who queued ``message`` from outside the session's own steps: another session (its
    ``source.senderSessionId``), or the session's background jobs (:data:`JOB_NOTICE_SENDER`
    for a ``tool-jobs`` notice); ``None`` for everything else."""
    source = message.get("source") if isinstance(message, dict) else None
    if not isinstance(source, dict):
        return None
    sender = source.get("senderSessionId")
    if isinstance(sender, str):
        return sender
    if source.get("kind") == "plugin" and source.get("plugin") == JOB_NOTICE_PLUGIN:
        return JOB_NOTICE_SENDER
    return None


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def user_message(text: str, *, source_kind: str = "user", message_id: str | None = None) -> Message:
    """A user message in the original's field order."""
    return {
        "content": [text_block(text)],
        "source": {"kind": source_kind},
        "role": "user",
        "id": message_id or new_message_id(),
    }


def assistant_message(
    content: list[Block], *, provider: str, model: str, message_id: str | None = None
) -> Message:
    return {
        "role": "assistant",
        "content": content,
        "source": {"kind": "model", "provider": provider, "model": model},
        "id": message_id or new_message_id(),
    }


def tool_result_message(
    call_id: str, content: list[Block], *, is_error: bool, message_id: str | None = None
) -> Message:
    return {
        "source": {"kind": "tool", "callId": call_id},
        "content": [{"type": "tool-result", "toolCallId": call_id, "content": content, "isError": is_error}],
        "role": "user",
        "id": message_id or new_message_id(),
    }


def joined_text(blocks: Iterable[Block], block_type: str = "text") -> str:
    """Concatenate the text of every block of ``block_type``."""
    return "".join(str(b.get("text", "")) for b in blocks if b.get("type") == block_type)


def tool_calls(blocks: Iterable[Block]) -> list[Block]:
    return [b for b in blocks if b.get("type") == "tool-call"]


ToolSpec = dict[str, Any]
"""A tool as the model sees it: ``{"name", "description", "parameters"}`` (JSON Schema)."""

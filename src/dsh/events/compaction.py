"""Compaction's events and messages, in the original's wire format (reference §1.2).

A compaction is four events: ``compaction/start`` (the lock), ``compaction/summary`` (the
summary and the span it shadows), the checkpoint ``user/message`` whose ``surfaceOp``
replaces that span, and ``compaction/end`` (``error`` on a failed attempt). The three
``compaction/*`` events are log-only; the checkpoint is the one surface change. The texts
(the checkpoint's framing, the summary instruction) are dsh's own words; their sources are
the original's, so either harness reads the other's logs.
"""

from __future__ import annotations

from typing import Final, NotRequired, TypedDict, cast

from dsh.events.chunks import Usage
from dsh.events.envelope import Event
from dsh.events.messages import Block, Message, Source, text_block
from dsh.events.vocabulary import COMPACTION_END, COMPACTION_START, COMPACTION_SUMMARY, USER_MESSAGE
from dsh.ids import new_message_id

CHECKPOINT_PLUGIN: Final = "compact"
"""``source.plugin`` of a checkpoint message."""
INSTRUCTION_PLUGIN: Final = "dsh-compaction-basic"
"""``source.plugin`` of the summary request's trailing instruction."""
OPEN_TAG: Final = "<compacted-summary>"
CLOSE_TAG: Final = "</compacted-summary>"

PREAMBLE: Final = (
    "This is a checkpoint the harness wrote automatically: an earlier part of this "
    "conversation was condensed into the summary below to keep the context window free. "
    "Take what it says as established background, do not mention or answer the checkpoint "
    "itself, and continue the work from the messages that follow it as if nothing happened."
)

INSTRUCTION: Final = "\n".join(
    [
        "Stop the task for a moment: you are now writing a checkpoint of the conversation above.",
        "Condense everything above into an engineering checkpoint, in English (translate any",
        "narrative, but keep literals exactly as written). Use exactly these Markdown sections,",
        "in this order, with short bullets, and write (none) under a section with nothing in it:",
        "## Primary Request and Intent",
        "## Key Technical Concepts",
        "## Files and Code",
        "## Errors and Fixes",
        "## Pending Jobs",
        "## Current Work",
        "## Next Step",
        "## Critical Context",
        "Keep every path, command, error message, identifier, number and signature verbatim.",
        "Record what the user corrected or insisted on. If an earlier <compacted-summary> block",
        "is above, merge it: keep what is still true, drop what is stale, do not copy it whole.",
        "Do not mention this checkpoint or the summarizing. Write only text; call no tool.",
    ]
)


class CompactionStartData(TypedDict):
    """``compaction/start``: ``turn`` is the open turn (automatic) or ``None`` (manual)."""

    compactionId: str
    turn: int | None
    sourceCommandId: NotRequired[str]


class ShadowedRange(TypedDict):
    start: int
    end: int


class CompactionSummaryData(TypedDict):
    """``compaction/summary``: the summary (text blocks), the provider's whole output, and
    the shadowed surface nodes (``shadowedSeqs`` in surface order, priced ``shadowedTokenCount``)."""

    compactionId: str
    summary: list[Block]
    rawOutput: list[Block]
    shadowedRange: ShadowedRange
    shadowedSeqs: list[int]
    shadowedTokenCount: int
    provider: str
    model: str
    llmStreamCall: NotRequired[bool]
    maxTokens: NotRequired[int]
    usage: NotRequired[Usage]
    sourceCommandId: NotRequired[str]


class CompactionEndData(TypedDict):
    """``compaction/end``: the same owner as the start; ``error`` when the attempt failed."""

    compactionId: str
    turn: int | None
    error: NotRequired[str]
    sourceCommandId: NotRequired[str]


def start_data(compaction_id: str, turn: int | None, command_id: str | None = None) -> CompactionStartData:
    data: CompactionStartData = {"compactionId": compaction_id, "turn": turn}
    if command_id is not None:
        data["sourceCommandId"] = command_id
    return data


def end_data(
    compaction_id: str, turn: int | None, error: str | None = None, command_id: str | None = None
) -> CompactionEndData:
    data: CompactionEndData = {"compactionId": compaction_id, "turn": turn}
    if command_id is not None:
        data["sourceCommandId"] = command_id
    if error is not None:
        data["error"] = error
    return data


def checkpoint_message(compaction_id: str, summary: list[Block], command_id: str | None = None) -> Message:
    """The checkpoint ``user/message``: the summary framed by the preamble and the tags."""
    source: dict[str, str] = {"kind": "plugin", "plugin": CHECKPOINT_PLUGIN, "compactionId": compaction_id}
    if command_id is not None:
        source["sourceCommandId"] = command_id
    return {
        "content": [text_block(f"{PREAMBLE}\n\n{OPEN_TAG}"), *summary, text_block(CLOSE_TAG)],
        "source": cast(Source, source),
        "role": "user",
        "id": new_message_id(),
    }


def instruction_message() -> Message:
    """The summary request's last message: what to write."""
    return {
        "content": [text_block(INSTRUCTION)],
        "source": {"kind": "plugin", "plugin": INSTRUCTION_PLUGIN},
        "role": "user",
        "id": new_message_id(),
    }


def _plugin(message: object) -> str | None:
    source = message.get("source") if isinstance(message, dict) else None
    if isinstance(source, dict) and source.get("kind") == "plugin":
        plugin = source.get("plugin")
        return plugin if isinstance(plugin, str) else None
    return None


def is_checkpoint(event: Event) -> bool:
    """A checkpoint: a ``user/message`` that replaces a span, from the ``compact`` plugin."""
    return (
        event.type == USER_MESSAGE
        and isinstance(event.surface_op, dict)
        and is_checkpoint_message(event.data)
    )


def is_checkpoint_message(message: object) -> bool:
    """Whether a history message is a compaction's checkpoint (from the ``compact`` plugin)."""
    return _plugin(message) == CHECKPOINT_PLUGIN


def is_instruction(message: object) -> bool:
    """Whether ``message`` is a summary request's instruction."""
    return _plugin(message) == INSTRUCTION_PLUGIN


def unframed(message: Message) -> list[Block]:
    """A checkpoint's summary blocks without the framing (a message without it: all of them)."""
    blocks = list(message.get("content", []))
    if (
        len(blocks) >= 2
        and str(blocks[0].get("text", "")).endswith(OPEN_TAG)
        and blocks[-1].get("text") == CLOSE_TAG
    ):
        return blocks[1:-1]
    return blocks


def summary_of(event: Event) -> CompactionSummaryData | None:
    """A ``compaction/summary``'s data, when it has the fields readers use."""
    data = event.data
    if event.type != COMPACTION_SUMMARY or not isinstance(data, dict):
        return None
    seqs = data.get("shadowedSeqs")
    if not isinstance(seqs, list) or not all(type(s) is int for s in seqs):
        return None
    return cast(CompactionSummaryData, data)


def bracket_of(event: Event) -> CompactionStartData | CompactionEndData | None:
    """A ``compaction/start`` or ``compaction/end``'s data."""
    if event.type in (COMPACTION_START, COMPACTION_END) and isinstance(event.data, dict):
        return cast(CompactionStartData, event.data)
    return None

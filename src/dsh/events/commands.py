"""``command/run`` and ``command/done``: a user's slash command, in the original's wire format.

Log-only events around a command that consumes no model turn (reference §1.5.3: the
original's ``/compact``): ``command/run {commandId, name, args, source: {kind}}`` when it is
asked for, ``command/done {commandId, kind, text, sourceEventSeq?}`` when it settled —
``sourceEventSeq`` the event the command produced (a compaction's ``compaction/summary``).
Read leniently: the codec checks no shape of theirs, as the original's logs may differ.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

CommandKind = Literal["success", "error"]
"""How a command settled: ``error`` when it was refused or failed (the text says why)."""


class CommandSource(TypedDict):
    kind: str


class CommandRunData(TypedDict):
    """``command/run``: which command, with what arguments, asked by whom."""

    commandId: str
    name: str
    args: str
    source: CommandSource


class CommandDoneData(TypedDict):
    """``command/done``: the outcome's kind and one-line text."""

    commandId: str
    kind: CommandKind
    text: str
    sourceEventSeq: NotRequired[int]


def command_run(command_id: str, name: str, args: str = "", source: str = "user") -> CommandRunData:
    return {"commandId": command_id, "name": name, "args": args, "source": {"kind": source}}


def command_done(
    command_id: str, kind: CommandKind, text: str, source_event_seq: int | None = None
) -> CommandDoneData:
    data: CommandDoneData = {"commandId": command_id, "kind": kind, "text": text}
    if source_event_seq is not None:
        data["sourceEventSeq"] = source_event_seq
    return data

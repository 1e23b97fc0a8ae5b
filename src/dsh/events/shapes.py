"""Each written payload's shape, stated once: the TypedDict of every event type dsh writes,
and the JSON fields read off it (the store codec derives its checks from them).

:data:`PAYLOADS` maps an event type to the TypedDict its writers build (``dsh.events.payloads``,
``dsh.events.todos``, ``dsh.events.messages``). :func:`json_fields` reads a TypedDict's
annotations as :class:`JsonField` values — the key, whether it is required, and the JSON
types (``int``, ``str``, ``bool``, ``dict``, ``list``) a value may have (``None``: any) —
so a checker never restates a payload's fields by hand.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints

from dsh.events.compaction import CompactionEndData, CompactionStartData, CompactionSummaryData
from dsh.events.messages import Message
from dsh.events.payloads import (
    ApprovalAskedData,
    ApprovalDecidedData,
    ApprovalPolicyData,
    AssistantAttemptData,
    AssistantMessageData,
    InboxSplicedData,
    RequestHeaderData,
    SandboxModeData,
    StepMark,
    ToolCallData,
    ToolResultData,
    TurnEnd,
    TurnStart,
)
from dsh.events.todos import TodoWriteData
from dsh.events.vocabulary import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    APPROVAL_POLICY,
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    COMPACTION_END,
    COMPACTION_START,
    COMPACTION_SUMMARY,
    INBOX_SPLICED,
    REQUEST_HEADER,
    SANDBOX_MODE,
    STEP_END,
    STEP_START,
    TODO_WRITE,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)

PAYLOADS: Final[Mapping[str, Any]] = {
    TURN_START: TurnStart,
    STEP_START: StepMark,
    STEP_END: StepMark,
    USER_MESSAGE: Message,
    REQUEST_HEADER: RequestHeaderData,
    ASSISTANT_MESSAGE: AssistantMessageData,
    ASSISTANT_ATTEMPT: AssistantAttemptData,
    TOOL_CALL: ToolCallData,
    TOOL_RESULT: ToolResultData,
    TURN_END: TurnEnd,
    SANDBOX_MODE: SandboxModeData,
    APPROVAL_POLICY: ApprovalPolicyData,
    APPROVAL_ASKED: ApprovalAskedData,
    APPROVAL_DECIDED: ApprovalDecidedData,
    INBOX_SPLICED: InboxSplicedData,
    TODO_WRITE: TodoWriteData,
    COMPACTION_START: CompactionStartData,
    COMPACTION_SUMMARY: CompactionSummaryData,
    COMPACTION_END: CompactionEndData,
}
"""Event type → the TypedDict of the payload dsh writes for it."""

JsonType = type[int] | type[str] | type[bool] | type[dict[str, Any]] | type[list[Any]]


@dataclass(frozen=True, slots=True)
class JsonField:
    """One key of a payload: required or not, and the JSON types its value may have
    (``None``: any value; ``annotation``: the declared type, for nested TypedDicts)."""

    key: str
    required: bool
    types: tuple[JsonType, ...] | None
    annotation: Any


def is_typeddict(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, dict) and hasattr(annotation, "__total__")


def json_types(annotation: object) -> tuple[JsonType, ...] | None:
    """The JSON types a value of ``annotation`` has (``None``: any value)."""
    origin = get_origin(annotation)
    if origin in (Required, NotRequired):
        return json_types(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        found: list[JsonType] = []
        for arg in get_args(annotation):
            kinds = json_types(arg)
            if kinds is None:
                return None
            found.extend(k for k in kinds if k not in found)
        return tuple(found)
    if origin is Literal:
        return tuple(dict.fromkeys(type(a) for a in get_args(annotation)))
    if origin is list or annotation is list:
        return (list,)
    if origin is dict or annotation is dict or is_typeddict(annotation):
        return (dict,)
    if annotation in (int, str, bool):
        return (annotation,)
    return None


@cache
def json_fields(typed: Any) -> tuple[JsonField, ...]:
    """The fields of the TypedDict ``typed``, in declaration order."""
    hints = get_type_hints(typed, include_extras=True)  # keeps NotRequired / Required
    out = []
    for key, hint in hints.items():
        marker = get_origin(hint)
        required = marker is Required or (marker is not NotRequired and key in typed.__required_keys__)
        bare = get_args(hint)[0] if marker in (Required, NotRequired) else hint
        out.append(JsonField(key, required, json_types(bare), bare))
    return tuple(out)

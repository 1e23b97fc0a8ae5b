"""Typed payloads of the events dsh writes, and the one reader of each.

Writers (the loop, the recorder of ``dsh serve``) build payloads with the constructors here
(``turn_start``, ``request_header`` (with ``header_body``), ``step_mark``, ``assistant_message_data``,
``assistant_attempt_data``, ``tool_call``, ``tool_result_data``, ``turn_end`` with
``error_reason`` / ``aborted_reason``, ``sandbox_mode``, ``approval_policy``,
``inbox_spliced``, ``approval_asked``, ``approval_decided``: key order as logged); readers in the
upper layers (ACP, the CLI, transcripts, the viewer, replay checks) go through the
``*_of(event)`` accessors instead of digging through the raw message dicts themselves.
An accessor answers ``None`` for an event of another type or a payload without the part;
it reads leniently (a stored log was validated when it was read, a foreign one may lack a
field), so a missing string is ``""`` and a missing flag ``False``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, cast

from dsh.events.chunks import Chunk, Failure, StreamRecord, Usage
from dsh.events.envelope import Event, raise_partial
from dsh.events.messages import Block, Message, ToolSpec
from dsh.events.vocabulary import (
    APPROVAL_POLICY,
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
)


class TurnStart(TypedDict):
    """``turn/start``: the turn's number (1-based)."""

    turn: int


class StepMark(TypedDict):
    """``step/start`` and ``step/end``: the turn and the step within it (1-based)."""

    turn: int
    step: int


class AssistantMessageData(TypedDict):
    """``assistant/message``: a model call's message, with its usage and its timed stream
    (``interrupted``: the call was cancelled and this is its partial text; ``wireUsage``: the
    provider's own usage object, ``dsh serve record`` keeps it). Without a ``stream`` it made
    no call: a message a ``dsh serve`` client wrote itself (or a version-0 log's)."""

    turn: int
    step: int
    message: Message
    interrupted: NotRequired[bool]
    usage: NotRequired[Usage]
    wireUsage: NotRequired[dict[str, Any]]
    stream: NotRequired[StreamRecord]
    wire: NotRequired[WireRecord]


class WireRecord(TypedDict):
    """A proxied call's reply exactly as its wire dialect sent it (``dsh serve record``):
    ``events`` are ``[name, data]`` pairs as received (an SSE event's name, ``""`` for none,
    and its raw ``data``; a whole JSON body is one pair with the name ``""``), ``dt`` the ms
    gap before each event after the first."""

    dialect: str
    status: int
    streamed: bool
    events: list[list[str]]
    dt: list[int]
    responseId: NotRequired[str]
    """The id a later request names to continue from this reply (``previous_response_id``)."""
    request: NotRequired[dict[str, Any]]
    """The dialect's own request fields the divergence check compares besides the header
    (``tool_choice``), as sent."""


class ToolResultData(TypedDict):
    """``tool/result``: the result message of a call, with the tool's error ``code`` (only on
    an error that has one) and its ``meta`` (only when the tool gave one)."""

    turn: int
    step: int
    message: Message
    error: NotRequired[dict[str, str]]
    meta: NotRequired[dict[str, Any]]


class HeaderConfig(TypedDict, total=False):
    """A request header's model route: ``provider``, ``model`` and ``maxTokens`` when set."""

    provider: str
    model: str
    maxTokens: int
    dialect: str
    """The wire dialect a ``dsh serve`` recording was made in (absent: Chat Completions)."""


class RequestHeader(TypedDict, total=False):
    """What a ``request/header`` says the model is asked with. Lenient, as recorded logs are
    read as they are: ``tools`` is a list of tool specs when dsh wrote it (the original may
    store a string), and other keys are kept."""

    config: HeaderConfig
    system: str
    tools: list[ToolSpec] | str


class RequestHeaderData(TypedDict):
    """``request/header``: the request's system prompt, tools and config, logged when they
    change (``reason``: ``initial``, ``resume`` or ``change``)."""

    header: RequestHeader
    reason: str


class AssistantAttemptData(TypedDict):
    """``assistant/attempt``: a model call that failed, with its timed stream (and usage, when
    the provider sent one before failing)."""

    turn: int
    step: int
    failure: Failure
    stream: StreamRecord
    usage: NotRequired[Usage]
    wire: NotRequired[WireRecord]


class AbortCause(TypedDict):
    """Who aborted a turn: ``user`` (a top-level agent's caller) or ``parent`` (a child's)."""

    kind: str


class TurnEndReason(TypedDict):
    """Why a turn ended: ``completed``, ``max-tokens``, ``blocked``, ``error`` (with its
    ``failure``), ``aborted`` (with the abort's own ``reason``), ``interrupted``, ..."""

    kind: str
    failure: NotRequired[Failure]
    reason: NotRequired[AbortCause]


class TurnEnd(TypedDict):
    """``turn/end``: the turn number and why it ended (dsh always writes a reason; a log may
    lack one, as the store's validation allows)."""

    turn: int
    reason: NotRequired[TurnEndReason]


class ToolCallData(TypedDict):
    """``tool/call``: the call the loop is about to run; ``arguments`` is the model's raw JSON text."""

    turn: int
    step: int
    callId: str
    name: str
    arguments: str


class ToolResultBlock(TypedDict):
    """The ``tool-result`` block of a ``tool/result`` message: what the model saw of a call."""

    type: Literal["tool-result"]
    toolCallId: str
    content: list[Block]
    isError: bool


class SandboxModeData(TypedDict):
    """``sandbox/mode``: the file policy from here on (``source``: who set it — ``delegation``
    in a child given its parent's explicit mode; absent when the session itself set it)."""

    mode: str
    source: NotRequired[str]


class ApprovalPolicyData(TypedDict):
    """``approval/policy``: the approval policy (``ask`` or ``never``) from here on (``source``:
    who set it, ``delegation`` in a child)."""

    policy: str
    source: NotRequired[str]


class InboxSplicedData(TypedDict):
    """``agent/inbox/spliced``: a change of an inbox queue (``target``: ``next-step`` or
    ``next-turn``) — an insert ``{target, start, inserted:[message]}`` or a claim ``{target,
    start: 0, removedCount, inserted: []}``."""

    target: str
    start: int
    removedCount: NotRequired[int]
    inserted: list[Message]


class ApprovalAskedData(TypedDict):
    """``approval/asked``: an approval request (``callId`` and ``reason`` only when known)."""

    id: str
    toolName: str
    callId: NotRequired[str]
    reason: NotRequired[str]


class ApprovalDecidedData(TypedDict):
    """``approval/decided``: the outcome of the request ``id`` (``allowed-once``, ``rejected``,
    ``cancelled`` or ``unavailable``)."""

    id: str
    outcome: str


def turn_start(turn: int) -> TurnStart:
    """The ``turn/start`` payload."""
    return {"turn": turn}


def step_mark(turn: int, step: int) -> StepMark:
    """The ``step/start`` / ``step/end`` payload, in the logged key order."""
    return {"turn": turn, "step": step}


def tool_call(turn: int, step: int, call_id: str, name: str, arguments: str) -> ToolCallData:
    """The ``tool/call`` payload, in the logged key order."""
    return {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments}


def assistant_message_data(
    turn: int,
    step: int,
    message: Message,
    stream: StreamRecord | None,
    *,
    usage: Usage | None = None,
    wire_usage: dict[str, Any] | None = None,
    interrupted: bool = False,
    wire: WireRecord | None = None,
) -> AssistantMessageData:
    """The ``assistant/message`` payload, in the logged key order (optional keys only when set;
    ``stream=None``: a message that made no call)."""
    data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
    if interrupted:
        data["interrupted"] = True
    if usage is not None:
        data["usage"] = usage
    if wire_usage is not None:
        data["wireUsage"] = wire_usage
    if stream is not None:
        data["stream"] = stream
    if wire is not None:
        data["wire"] = wire
    return cast("AssistantMessageData", data)


def tool_result_data(
    turn: int,
    step: int,
    message: Message,
    *,
    error_code: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ToolResultData:
    """The ``tool/result`` payload, in the logged key order (``error``, then ``meta``, when set)."""
    data: ToolResultData = {"turn": turn, "step": step, "message": message}
    if error_code:
        data["error"] = {"code": error_code}
    if meta is not None:
        data["meta"] = meta
    return data


def header_body(
    provider: str,
    model: str,
    max_tokens: int | None,
    system: str | None,
    tools: list[ToolSpec] | None,
    *,
    dialect: str | None = None,
) -> RequestHeader:
    """A request header in the logged key order (``maxTokens``, ``dialect``, ``system`` and
    ``tools`` only when given)."""
    config: HeaderConfig = {"provider": provider, "model": model}
    if max_tokens is not None:
        config["maxTokens"] = max_tokens
    if dialect is not None:
        config["dialect"] = dialect
    header: RequestHeader = {"config": config}
    if system is not None:
        header["system"] = system
    if tools is not None:
        header["tools"] = tools
    return header


def request_header(header: RequestHeader, reason: str) -> RequestHeaderData:
    """The ``request/header`` payload, in the logged key order."""
    return {"header": header, "reason": reason}


def assistant_attempt_data(
    turn: int,
    step: int,
    failure: Failure,
    stream: StreamRecord,
    *,
    usage: Usage | None = None,
    wire: WireRecord | None = None,
) -> AssistantAttemptData:
    """The ``assistant/attempt`` payload, in the logged key order (``usage``, then ``wire``,
    last, when sent)."""
    data: AssistantAttemptData = {"turn": turn, "step": step, "failure": failure, "stream": stream}
    if usage is not None:
        data["usage"] = usage
    if wire is not None:
        data["wire"] = wire
    return data


def error_reason(code: str, message: str) -> TurnEndReason:
    """The reason of a turn a failure ended: ``{kind: "error", failure: {code, message}}``."""
    return {"kind": "error", "failure": {"code": code, "message": message}}


def aborted_reason(by: str) -> TurnEndReason:
    """The reason of a cancelled turn: ``{kind: "aborted", reason: {kind: by}}``."""
    return {"kind": "aborted", "reason": {"kind": by}}


def turn_end(turn: int, reason: TurnEndReason) -> TurnEnd:
    """The ``turn/end`` payload, in the logged key order."""
    return {"turn": turn, "reason": reason}


def sandbox_mode(mode: str, source: str | None = None) -> SandboxModeData:
    """The ``sandbox/mode`` payload, in the logged key order (``source`` last, when set)."""
    data: SandboxModeData = {"mode": mode}
    if source is not None:
        data["source"] = source
    return data


def approval_policy(policy: str, source: str | None = None) -> ApprovalPolicyData:
    """The ``approval/policy`` payload, in the logged key order (``source`` last, when set)."""
    data: ApprovalPolicyData = {"policy": policy}
    if source is not None:
        data["source"] = source
    return data


def inbox_spliced(
    target: str, start: int, inserted: list[Message], *, removed_count: int | None = None
) -> InboxSplicedData:
    """The ``agent/inbox/spliced`` payload, in the logged key order (``removedCount``, when
    set, before ``inserted``)."""
    if removed_count is None:
        return {"target": target, "start": start, "inserted": inserted}
    return {"target": target, "start": start, "removedCount": removed_count, "inserted": inserted}


def approval_asked(
    request_id: str, tool_name: str, call_id: str | None, reason: str | None
) -> ApprovalAskedData:
    """The ``approval/asked`` payload, in the logged key order (``callId``, ``reason`` when known)."""
    data: ApprovalAskedData = {"id": request_id, "toolName": tool_name}
    if call_id is not None:
        data["callId"] = call_id
    if reason is not None:
        data["reason"] = reason
    return data


def approval_decided(request_id: str, outcome: str) -> ApprovalDecidedData:
    """The ``approval/decided`` payload, in the logged key order."""
    return {"id": request_id, "outcome": outcome}


def _data(event: Event, *types: str) -> dict[str, Any] | None:
    if event.type not in types or not isinstance(event.data, dict):
        return None
    return event.data


def _int(value: object) -> int:
    return value if type(value) is int else 0


def blocks_of(message: Message | None) -> list[Block]:
    """A message's content blocks (only the dicts; ``[]`` without content)."""
    content: object = message.get("content") if message is not None else None
    return [cast(Block, b) for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def request_header_of(event: Event) -> RequestHeader | None:
    """The header a ``request/header`` logs (``None``: another event, or no header object)."""
    data = _data(event, REQUEST_HEADER)
    header = data.get("header") if data is not None else None
    return cast(RequestHeader, header) if isinstance(header, dict) else None


def approval_policy_of(event: Event) -> str | None:
    """The policy an ``approval/policy`` sets (``None``: another event, or no string policy)."""
    data = _data(event, APPROVAL_POLICY)
    policy = data.get("policy") if data is not None else None
    return policy if isinstance(policy, str) else None


def turn_end_of(event: Event) -> TurnEnd | None:
    """The payload of a ``turn/end``; a reason without a string ``kind`` is left out."""
    data = _data(event, TURN_END)
    if data is None:
        return None
    reason = data.get("reason")
    if not isinstance(reason, dict) or not isinstance(reason.get("kind"), str):
        return {"turn": _int(data.get("turn"))}
    return turn_end(_int(data.get("turn")), reason)  # type: ignore[arg-type]


def turn_end_kind(event: Event) -> str | None:
    """How a ``turn/end`` says its turn ended (``None``: not a ``turn/end``, or no reason)."""
    end = turn_end_of(event)
    reason = end.get("reason") if end is not None else None
    return reason["kind"] if reason is not None else None


def message_of(event: Event) -> Message | None:
    """The message an ``assistant/message`` or ``tool/result`` carries."""
    etype, data = event.type, event.data  # on the history projection's hot path: kept lean
    if (etype != ASSISTANT_MESSAGE and etype != TOOL_RESULT) or type(data) is not dict:
        return None
    message = data.get("message")
    return cast(Message, message) if type(message) is dict else None


def assistant_blocks_of(event: Event) -> list[Block] | None:
    """The content blocks of an ``assistant/message`` (``None`` for any other event)."""
    if event.type != ASSISTANT_MESSAGE:
        return None
    return blocks_of(message_of(event))


def tool_call_of(event: Event) -> ToolCallData | None:
    """The payload of a ``tool/call``."""
    data = _data(event, TOOL_CALL)
    if data is None:
        return None
    arguments = data.get("arguments")
    return {
        "turn": _int(data.get("turn")),
        "step": _int(data.get("step")),
        "callId": str(data.get("callId", "")),
        "name": str(data.get("name", "")),
        "arguments": arguments if isinstance(arguments, str) else "",
    }


def result_block(message: Message | None) -> ToolResultBlock | None:
    """The first ``tool-result`` block of a message."""
    for block in blocks_of(message):
        if block.get("type") == "tool-result":
            content = block.get("content")
            return {
                "type": "tool-result",
                "toolCallId": str(block.get("toolCallId", "")),
                "content": [b for b in content if isinstance(b, dict)] if isinstance(content, list) else [],
                "isError": block.get("isError") is True,
            }
    return None


def tool_result_of(event: Event) -> ToolResultBlock | None:
    """The ``tool-result`` block of a ``tool/result`` event."""
    if event.type != TOOL_RESULT:
        return None
    return result_block(message_of(event))


def usage_of(event: Event) -> Usage | None:
    """The usage an ``assistant/message`` or ``assistant/attempt`` logged."""
    data = _data(event, ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT)
    usage = data.get("usage") if data is not None else None
    return usage if isinstance(usage, dict) else None  # type: ignore[return-value]


def failure_of(event: Event) -> Failure | None:
    """The failure an ``assistant/attempt`` logged."""
    data = _data(event, ASSISTANT_ATTEMPT)
    failure = data.get("failure") if data is not None else None
    if not isinstance(failure, dict):
        return None
    return {"code": str(failure.get("code", "")), "message": str(failure.get("message", ""))}


_INTS = frozenset({int})


def stream_of(event: Event) -> StreamRecord | None:
    """The timed stream an ``assistant/message`` or ``assistant/attempt`` logged (``None``:
    none, as in a version-0 message, whose ``assistant/chunk`` events made the call).

    The logged lists themselves (no copy on the replay's load path): read them, never
    mutate them; a ``dt`` holding anything but integers comes back filtered. A partial event
    (a surface read) is refused: its stream was not read."""
    if event.partial:
        raise_partial(event)
    data = _data(event, ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT)
    stream = data.get("stream") if data is not None else None
    if not isinstance(stream, dict):
        return None
    raw, dt = stream.get("chunks"), stream.get("dt")
    # The chunks' shapes are the codec's rule, checked when a log is decoded (and dsh writes
    # only well-formed ones): the reader hands out the logged list, not a checked copy.
    chunks: list[Chunk] = raw if isinstance(raw, list) else []
    if not isinstance(dt, list):
        dt = []
    elif not _INTS.issuperset(map(type, dt)):  # one pass in C: on the replay's load path
        dt = [d for d in dt if type(d) is int]
    return {"chunks": chunks, "dt": dt}


def wire_of(event: Event) -> WireRecord | None:
    """The exact wire reply an ``assistant/message`` or ``assistant/attempt`` logged (``None``:
    none, as for every call but a ``dsh serve`` recording in another dialect than Chat
    Completions). The logged lists themselves: read them, never mutate them. A partial event
    is refused, as by :func:`stream_of`."""
    if event.partial:
        raise_partial(event)
    data = _data(event, ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT)
    wire = data.get("wire") if data is not None else None
    if not isinstance(wire, dict) or not isinstance(wire.get("events"), list):
        return None
    return cast(WireRecord, wire)


def wire_usage_of(event: Event) -> dict[str, Any] | None:
    """The provider's own usage object an ``assistant/message`` logged (``wireUsage``)."""
    data = _data(event, ASSISTANT_MESSAGE)
    usage = data.get("wireUsage") if data is not None else None
    return usage if isinstance(usage, dict) else None


def header_dialect(header: RequestHeader | None) -> str | None:
    """The wire dialect a request header notes (``None``: none, Chat Completions)."""
    config = header.get("config") if header is not None else None
    dialect = config.get("dialect") if isinstance(config, dict) else None
    return dialect if isinstance(dialect, str) else None

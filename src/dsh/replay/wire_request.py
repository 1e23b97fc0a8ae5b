"""Chat Completions requests as dsh sees them: a wire body → a ``ModelRequest`` to check.

The HTTP replay server (``dsh serve``) receives a client's ``/v1/chat/completions`` body
and must compare it with what the recorded model saw, using the same divergence rules as
every other replay (:class:`~dsh.replay.fidelity.SessionCheck`). :func:`request_from_body`
maps the body back to dsh's vocabulary (the reverse of ``dsh.model.openai_wire``):

- the leading ``system`` message(s) → ``system``; ``tools[].function`` → tool specs;
  ``model``; ``max_tokens`` (or ``max_completion_tokens``) → ``max_tokens``;
- ``user`` → a user message with one text block (string or the text parts joined);
- ``assistant`` → reasoning (``reasoning_content``), text, then one tool-call block per
  ``tool_calls`` entry; ``tool`` → one tool-result message per call id.

The wire is lossier than a log (a tool result's ``isError``, ``(no output)``, message
ids): :func:`wire_derived` passes a recording's history and headers through the same
projection (``openai_wire`` forward, then this module back), so both sides of the check
lose exactly the same things.

A recording ``dsh serve record`` made (its request headers name the provider
:data:`WIRE_PROVIDER`) saw only the wire, so any replay of it — ``dsh scenario replay``
driving dsh's own loop too — checks the live requests through the same projection
(:class:`WireProjection`, :func:`recorded_over_wire`): an error result or an empty output
is then the same on both sides instead of a false divergence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh.events.messages import Block, Message, Source, ToolSpec
from dsh.events.payloads import RequestHeader
from dsh.events.vocabulary import RUNTIME_CONTEXT_PLUGIN, RUNTIME_CONTEXT_PREFIX
from dsh.model import ModelRequest
from dsh.model.openai_wire import request_body, wire_messages, wire_tools
from dsh.replay.derive import Derived, RecordedCall


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def _leading_system(wire: Sequence[object]) -> tuple[str | None, int]:
    """The system prompt (the leading system/developer messages joined) and where the history starts."""
    systems: list[str] = []
    start = 0
    for i, raw in enumerate(wire):
        if not isinstance(raw, Mapping):
            continue
        if raw.get("role") not in ("system", "developer"):
            return ("\n\n".join(systems) if systems else None), i
        systems.append(_text(raw.get("content")))
        start = i + 1
    return ("\n\n".join(systems) if systems else None), start


def _message(raw: Mapping[str, Any]) -> Message:
    """One wire message after the leading system ones, as a dsh message."""
    role = raw.get("role")
    if role == "assistant":
        blocks: list[Block] = []
        reasoning = raw.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            blocks.append({"type": "reasoning", "text": reasoning})
        text = _text(raw.get("content"))
        if text:
            blocks.append({"type": "text", "text": text})
        for call in raw.get("tool_calls") or ():
            if isinstance(call, Mapping):
                function = call.get("function")
                fn = function if isinstance(function, Mapping) else {}
                blocks.append(
                    {
                        "type": "tool-call",
                        "id": str(call.get("id", "")),
                        "name": str(fn.get("name", "")),
                        "arguments": str(fn.get("arguments", "")),
                    }
                )
        return {"role": "assistant", "content": blocks, "source": {"kind": "model"}}
    if role == "tool":
        call_id = str(raw.get("tool_call_id", ""))
        result: Block = {
            "type": "tool-result",
            "toolCallId": call_id,
            "content": [{"type": "text", "text": _text(raw.get("content"))}],
            "isError": False,
        }
        return {"role": "user", "content": [result], "source": {"kind": "tool", "callId": call_id}}
    kind = "user" if role == "user" else str(role)
    text = _text(raw.get("content"))
    source: Source = {"kind": kind}
    if kind == "user" and text.startswith(RUNTIME_CONTEXT_PREFIX):  # dsh's own snapshot, by its text
        source = {"kind": "plugin", "plugin": RUNTIME_CONTEXT_PLUGIN}
    return {"role": "user", "content": [{"type": "text", "text": text}], "source": source}


def wire_to_messages(wire: Sequence[object]) -> tuple[str | None, list[Message]]:
    """The system prompt (leading system messages joined) and the dsh history of ``wire``."""
    system, start = _leading_system(wire)
    return system, [_message(raw) for raw in wire[start:] if isinstance(raw, Mapping)]


def wire_to_tools(tools: object) -> list[ToolSpec]:
    """``tools[]`` of a body as dsh tool specs (``name``, ``description``, ``parameters``)."""
    out: list[ToolSpec] = []
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping):
            out.append(
                {
                    "name": str(function.get("name", "")),
                    "description": str(function.get("description") or ""),
                    "parameters": function.get("parameters") or {"type": "object", "properties": {}},
                }
            )
    return out


@dataclass(frozen=True, slots=True)
class ReadBody:
    """A body read as a ``ModelRequest``, with the wire it came from (for the next read)."""

    request: ModelRequest
    wire: list[object]
    """The body's ``messages`` as received."""
    start: int
    """Where the history starts in ``wire`` (after the leading system messages)."""
    read: list[Message | None]
    """Per entry of ``wire`` from ``start``: the message it became (``None``: not a message)."""
    wire_tools: object


def read_body(body: Mapping[str, Any], previous: ReadBody | None = None, session_id: str = "") -> ReadBody:
    """:func:`request_from_body`, reusing ``previous``'s message and tool objects where the
    wire is equal (a message reads the same wherever it stands after the system prompt), so
    a check that skips what it already compared (the same objects) applies over HTTP too."""
    messages = body.get("messages")
    wire: list[object] = messages if isinstance(messages, list) else []
    system, start = _leading_system(wire)
    read: list[Message | None] = []
    if previous is not None and previous.start == start and wire[:start] == previous.wire[:start]:
        for new, old, message in zip(wire[start:], previous.wire[start:], previous.read, strict=False):
            if new != old:
                break
            read.append(message)
    read.extend(_message(raw) if isinstance(raw, Mapping) else None for raw in wire[start + len(read) :])
    raw_tools = body.get("tools")
    same_tools = previous is not None and raw_tools == previous.wire_tools
    tools = previous.request.tools if previous is not None and same_tools else wire_to_tools(raw_tools)
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    request = ModelRequest(
        session_id=session_id,
        model=str(body.get("model", "")),
        messages=[m for m in read if m is not None],
        system=system,
        tools=tools,
        max_tokens=max_tokens if type(max_tokens) is int else None,
    )
    return ReadBody(request, wire, start, read, raw_tools)


def request_from_body(body: Mapping[str, Any], session_id: str = "") -> ModelRequest:
    """The ``ModelRequest`` a Chat Completions body carries (see the module docstring)."""
    return read_body(body, None, session_id).request


WIRE_PROVIDER = "upstream"
"""The provider ``dsh serve record`` writes in a recording's request headers."""


def recorded_over_wire(derived: Derived) -> bool:
    """Whether the recording saw only the wire (``dsh serve record`` made it)."""
    return any(
        ((call.header or {}).get("config") or {}).get("provider") == WIRE_PROVIDER for call in derived.calls
    )


def over_the_wire(message: Message) -> list[Message]:
    """``message`` after a trip over the wire (it may become several messages)."""
    return wire_to_messages(wire_messages(None, [message]))[1]


class WireProjection:
    """One live session's requests as they would arrive over the wire (reusing, like the
    server, what it read of the previous request where the wire is equal)."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: ReadBody | None = None

    def __call__(self, request: ModelRequest) -> ModelRequest:
        self._last = read_body(request_body(request, request.model), self._last, request.session_id)
        return self._last.request


def _wire_header(header: RequestHeader | None) -> RequestHeader | None:
    if header is None:
        return None
    out = header.copy()
    tools = header.get("tools")
    if isinstance(tools, list):
        out["tools"] = wire_to_tools(wire_tools([t for t in tools if isinstance(t, dict)]))
    system = header.get("system")
    if isinstance(system, str):
        seen = wire_to_messages(wire_messages(system, []))[0]
        if seen is None:
            del out["system"]
        else:
            out["system"] = seen
    return out


def wire_derived(derived: Derived) -> Derived:
    """``derived`` with its history and headers as they look after a trip over the wire.

    Each recorded message may become several (a user message with tool results and text);
    every call's history length is moved accordingly. The script is unchanged.
    """
    messages: list[Message] = []
    index = [0]
    for message in derived.messages:
        messages.extend(over_the_wire(message))
        index.append(len(messages))
    surfaces = [[j for i in nodes for j in range(index[i], index[i + 1])] for nodes in derived.surfaces]
    headers: dict[int, RequestHeader | None] = {}
    calls = []
    for call in derived.calls:
        key = id(call.header)
        if key not in headers:
            headers[key] = _wire_header(call.header)
        nodes = derived.surfaces[call.surface][: call.history]
        length = sum(index[i + 1] - index[i] for i in nodes)
        calls.append(RecordedCall(call.turn, call.step, length, headers[key], call.checked, call.surface))
    return Derived(list(derived.entries), calls, messages, surfaces=surfaces)

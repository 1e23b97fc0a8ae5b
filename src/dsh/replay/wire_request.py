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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dsh.events.messages import Block, Message, ToolSpec
from dsh.model import ModelRequest
from dsh.model.openai_wire import wire_messages, wire_tools
from dsh.replay.derive import Derived, RecordedCall


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def wire_to_messages(wire: Sequence[object]) -> tuple[str | None, list[Message]]:
    """The system prompt (leading system messages joined) and the dsh history of ``wire``."""
    systems: list[str] = []
    out: list[Message] = []
    for raw in wire:
        if not isinstance(raw, Mapping):
            continue
        role = raw.get("role")
        if role in ("system", "developer") and not out:
            systems.append(_text(raw.get("content")))
        elif role == "assistant":
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
            out.append({"role": "assistant", "content": blocks, "source": {"kind": "model"}})
        elif role == "tool":
            call_id = str(raw.get("tool_call_id", ""))
            result = {
                "type": "tool-result",
                "toolCallId": call_id,
                "content": [{"type": "text", "text": _text(raw.get("content"))}],
                "isError": False,
            }
            out.append({"role": "user", "content": [result], "source": {"kind": "tool", "callId": call_id}})
        else:
            kind = "user" if role == "user" else str(role)
            out.append(
                {"role": "user", "content": [{"type": "text", "text": _text(raw.get("content"))}],
                 "source": {"kind": kind}}
            )  # fmt: skip
    return ("\n\n".join(systems) if systems else None), out


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


def request_from_body(body: Mapping[str, Any], session_id: str = "") -> ModelRequest:
    """The ``ModelRequest`` a Chat Completions body carries (see the module docstring)."""
    messages = body.get("messages")
    system, history = wire_to_messages(messages if isinstance(messages, list) else [])
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    return ModelRequest(
        session_id=session_id,
        model=str(body.get("model", "")),
        messages=history,
        system=system,
        tools=wire_to_tools(body.get("tools")),
        max_tokens=max_tokens if type(max_tokens) is int else None,
    )


def _wire_header(header: dict[str, Any] | None) -> dict[str, Any] | None:
    if header is None:
        return None
    out = dict(header)
    tools = header.get("tools")
    if isinstance(tools, list):
        out["tools"] = wire_to_tools(wire_tools([t for t in tools if isinstance(t, dict)]))
    system = header.get("system")
    if isinstance(system, str):
        out["system"] = wire_to_messages(wire_messages(system, []))[0]
    return out


def wire_derived(derived: Derived) -> Derived:
    """``derived`` with its history and headers as they look after a trip over the wire.

    Each recorded message may become several (a user message with tool results and text);
    every call's history length is moved accordingly. The script is unchanged.
    """
    messages: list[Message] = []
    index = [0]
    for message in derived.messages:
        messages.extend(wire_to_messages(wire_messages(None, [message]))[1])
        index.append(len(messages))
    headers: dict[int, dict[str, Any] | None] = {}
    calls = []
    for call in derived.calls:
        key = id(call.header)
        if key not in headers:
            headers[key] = _wire_header(call.header)
        calls.append(RecordedCall(call.turn, call.step, index[call.history], headers[key]))
    return Derived(list(derived.entries), calls, messages)

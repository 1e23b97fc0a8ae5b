"""Responses API items as dsh messages, tools and usage (the rule :mod:`.responses` reads
requests and replies with; see its docstring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dsh import jsonx
from dsh.events.chunks import Usage
from dsh.events.messages import Block, Message, Source, ToolSpec

_TEXT_PARTS = frozenset({"output_text", "input_text", "text", "refusal"})


def _text_of(part: Mapping[str, Any]) -> str:
    return str(part.get("text", part.get("refusal", "")))


def _part(part: object) -> Block:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, Mapping):
        return {"type": "text", "text": jsonx.dumps_sorted(part)}
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        return {"type": "text", "text": _text_of(part)}
    if kind == "input_image":
        return {"type": "image", "url": str(part.get("image_url") or part.get("file_id") or "")}
    return {"type": str(kind), "text": jsonx.dumps_sorted({k: v for k, v in part.items() if k != "type"})}


def _parts(content: object) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [_part(p) for p in content] if isinstance(content, list) else []


def _assistant_block(item: Mapping[str, Any]) -> list[Block]:
    kind = item.get("type", "message")
    if kind == "reasoning":
        summary = item.get("summary") or item.get("content") or []
        text = "\n\n".join(_text_of(p) for p in summary if isinstance(p, Mapping))
        block: Block = {"type": "reasoning", "text": text}
        if isinstance(item.get("encrypted_content"), str):
            block["signature"] = item["encrypted_content"]
        return [block]
    if kind == "function_call":
        return [
            {
                "type": "tool-call",
                "id": str(item.get("call_id", "")),
                "name": str(item.get("name", "")),
                "arguments": str(item.get("arguments", "")),
            }
        ]
    if kind == "message":
        return _parts(item.get("content"))
    kept = {k: v for k, v in item.items() if k not in ("id", "status")}
    return [{"type": f"item:{kind}", "text": jsonx.dumps_sorted(kept)}]


def _is_assistant(item: Mapping[str, Any]) -> bool:
    """Whether an item is the model's (every kind but a message from another role and a
    tool's output: reasoning, function calls, hosted tools' calls)."""
    kind = item.get("type", "message")
    if kind == "message":
        return bool(item.get("role") == "assistant")
    return bool(kind != "function_call_output")


def items_to_messages(items: Sequence[object]) -> list[Message]:
    """``input`` (or a reply's ``output``) items as dsh messages (the module docstring's rule)."""
    out: list[Message] = []
    assistant: list[Block] | None = None
    for raw in items:
        item: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {"role": "user", "content": str(raw)}
        if _is_assistant(item):
            if assistant is None:
                assistant = []
                out.append({"role": "assistant", "content": assistant, "source": {"kind": "model"}})
            assistant.extend(_assistant_block(item))
            continue
        assistant = None
        if item.get("type") == "function_call_output":
            call_id = str(item.get("call_id", ""))
            result: Block = {
                "type": "tool-result",
                "toolCallId": call_id,
                "content": _parts(item.get("output")),
                "isError": False,
            }
            out.append({"role": "user", "content": [result], "source": {"kind": "tool", "callId": call_id}})
        else:
            role = str(item.get("role", "user"))
            source: Source = {"kind": "user" if role == "user" else role}
            out.append({"role": "user", "content": _parts(item.get("content")), "source": source})
    return out


def tools_of(tools: object) -> list[ToolSpec]:
    out: list[ToolSpec] = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") == "function":
            out.append(
                {
                    "name": str(tool.get("name", "")),
                    "description": str(tool.get("description") or ""),
                    "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                }
            )
        else:
            out.append({"name": str(tool.get("type", "")), "description": "", "parameters": dict(tool)})
    return out


def usage_of(usage: object) -> Usage | None:
    if not isinstance(usage, Mapping):
        return None
    input_details = usage.get("input_tokens_details") or {}
    output_details = usage.get("output_tokens_details") or {}
    cached = int(input_details.get("cached_tokens") or 0)
    out: Usage = {
        "inputTokens": int(usage.get("input_tokens") or 0) - cached,
        "outputTokens": int(usage.get("output_tokens") or 0),
    }
    if cached:
        out["cacheReadTokens"] = cached
    if output_details.get("reasoning_tokens"):
        out["reasoningTokens"] = int(output_details["reasoning_tokens"])
    return out

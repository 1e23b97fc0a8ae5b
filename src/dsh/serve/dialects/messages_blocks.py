"""Messages API content as dsh messages, tools and usage (the rule :mod:`.messages` reads
requests and replies with; see its docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh import jsonx
from dsh.events.chunks import Usage
from dsh.events.messages import Block, Message, ToolSpec


def _arguments(value: object) -> str:
    return jsonx.dumps_sorted(value if value is not None else {})


def block(raw: object) -> Block:
    """One content block as dsh logs it."""
    if isinstance(raw, str):
        return {"type": "text", "text": raw}
    item: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    kind = item.get("type")
    if kind == "text":
        return {"type": "text", "text": str(item.get("text", ""))}
    if kind == "thinking":
        return {
            "type": "reasoning",
            "text": str(item.get("thinking", "")),
            "signature": str(item.get("signature", "")),
        }
    if kind == "redacted_thinking":
        return {"type": "redacted-reasoning", "data": str(item.get("data", ""))}
    if kind == "tool_use":
        return {
            "type": "tool-call",
            "id": str(item.get("id", "")),
            "name": str(item.get("name", "")),
            "arguments": _arguments(item.get("input")),
        }
    if kind == "image":
        found = item.get("source")
        source: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if source.get("type") == "base64":
            return {
                "type": "image",
                "mediaType": str(source.get("media_type", "")),
                "data": str(source.get("data", "")),
            }
        return {"type": "image", "url": str(source.get("url") or source.get("file_id") or "")}
    kept = {k: v for k, v in item.items() if k not in ("type", "cache_control")}
    return {"type": str(kind), "text": jsonx.dumps_sorted(kept)}


def _blocks(content: object) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block(b) for b in content] if isinstance(content, list) else []


def _user(content: object) -> list[Message]:
    """A user message: each ``tool_result`` its own message, the other blocks between them one."""
    out: list[Message] = []
    pending: list[Block] = []
    for raw in content if isinstance(content, list) else [content]:
        if isinstance(raw, Mapping) and raw.get("type") == "tool_result":
            if pending:
                out.append({"role": "user", "content": pending, "source": {"kind": "user"}})
                pending = []
            call_id = str(raw.get("tool_use_id", ""))
            result: Block = {
                "type": "tool-result",
                "toolCallId": call_id,
                "content": _blocks(raw.get("content")),
                "isError": raw.get("is_error") is True,
            }
            out.append({"role": "user", "content": [result], "source": {"kind": "tool", "callId": call_id}})
        else:
            pending.append(block(raw))
    if pending or not out:
        out.append({"role": "user", "content": pending, "source": {"kind": "user"}})
    return out


def to_messages(wire: list[object]) -> list[Message]:
    out: list[Message] = []
    for raw in wire:
        message: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        if message.get("role") == "assistant":
            out.append(
                {"role": "assistant", "content": _blocks(message.get("content")), "source": {"kind": "model"}}
            )
        else:
            out.extend(_user(message.get("content")))
    return out


def system_of(system: object) -> str | None:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n\n".join(str(b.get("text", "")) for b in system if isinstance(b, Mapping))
    return None


def tools_of(tools: object) -> list[ToolSpec]:
    out: list[ToolSpec] = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, Mapping):
            schema = tool.get("input_schema")
            parameters = schema if schema is not None else {k: v for k, v in tool.items() if k != "name"}
            out.append(
                {
                    "name": str(tool.get("name", "")),
                    "description": str(tool.get("description") or ""),
                    "parameters": parameters,
                }
            )
    return out


def usage_of(usage: Mapping[str, Any]) -> Usage:
    out: Usage = {
        "inputTokens": int(usage.get("input_tokens") or 0),
        "outputTokens": int(usage.get("output_tokens") or 0),
    }
    if usage.get("cache_read_input_tokens"):
        out["cacheReadTokens"] = int(usage["cache_read_input_tokens"])
    return out

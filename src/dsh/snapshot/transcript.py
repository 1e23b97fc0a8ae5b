"""The normalized transcript of a run, built from its session logs.

One line per visible update: prompts, messages from other sessions (a background child's
notice or report, a parent's relay), assistant text, tool calls and results, subagent start
(kind and cut) and finish, failed attempts and turn ends. A child's lines are spliced
in where the parent's delegation result is committed (model order), so the transcript does
not depend on how concurrent children were scheduled. Session ids become
``{{session:N}}`` by first appearance and the run's cwd becomes ``{{cwd}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh import jsonx
from dsh.events import Event
from dsh.events.descriptor import SubagentDescriptor, find_descriptor
from dsh.events.descriptor import child_kind as session_child_kind
from dsh.events.messages import joined_text
from dsh.events.payloads import assistant_blocks_of, tool_result_of, turn_end_kind
from dsh.events.todos import todos_of
from dsh.events.vocabulary import (
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    TOOL_CALL,
    TURN_END,
    USER_MESSAGE,
)
from dsh.session.views import usage_totals
from dsh.store import LoadedSession

SUBAGENT_TOOLS = frozenset({"subagent", "subagent_fork"})
RELAYED = frozenset({"subagent-settled", "subagent-report", "coordinator"})
"""``user/message`` sources of messages one session sent another."""

Line = dict[str, Any]


def _descriptor(loaded: LoadedSession) -> SubagentDescriptor | None:
    return find_descriptor(loaded.own_events)


def child_kind(loaded: LoadedSession) -> str:
    """``fork`` or ``spawn`` for a child session (``primary`` for a top-level one); the rule
    of :func:`dsh.events.descriptor.child_kind`."""
    return session_child_kind(loaded.header, loaded.own_events) or "primary"


def _label(loaded: LoadedSession) -> str | None:
    descriptor = _descriptor(loaded)
    return descriptor.label if descriptor is not None else None


def children_by_call(sessions: Mapping[str, LoadedSession]) -> dict[tuple[str, str], str]:
    """(parent id, tool call id) → child id, from delegation identity or creation order."""
    out: dict[tuple[str, str], str] = {}
    unkeyed: dict[str, list[LoadedSession]] = {}
    for sid, loaded in sessions.items():
        parent = loaded.header.parent_session
        if parent is None:
            continue
        descriptor = _descriptor(loaded)
        if descriptor is not None and descriptor.call_id is not None:
            out[(parent, descriptor.call_id)] = sid
        else:
            unkeyed.setdefault(parent, []).append(loaded)
    for parent, children in unkeyed.items():
        children.sort(key=lambda s: (s.header.created_at, s.header.id))
        parent_log = sessions.get(parent)
        if parent_log is None:
            continue
        calls = [
            e.data["callId"]
            for e in parent_log.events[parent_log.inherited_event_count :]
            if e.type == TOOL_CALL and e.data.get("name") in SUBAGENT_TOOLS
        ]
        for call_id, child in zip(calls, children, strict=False):
            out.setdefault((parent, call_id), child.header.id)
    return out


def _arguments(raw: object) -> object:
    if isinstance(raw, str):
        try:
            return jsonx.loads(raw) if raw.strip() else {}
        except jsonx.JSONDecodeError:
            return raw
    return raw


def build_transcript(
    sessions: Mapping[str, LoadedSession], primary: str, *, detail: bool = False
) -> list[Line]:
    """The raw (not yet normalized) transcript lines of a run rooted at ``primary``.

    ``detail`` (the reading view of ``dsh log``) adds ``reasoning`` lines before an
    answer's text and a ``usage`` total (every settlement of that session's turn) to each
    ``turn-end``; recorded ``transcript.expected.jsonl`` files are built without it.
    """
    by_call = children_by_call(sessions)
    lines: list[Line] = []
    walked: set[str] = set()  # a parentSession cycle (a session its own child) is spliced once

    def walk(sid: str) -> None:
        walked.add(sid)
        loaded = sessions[sid]
        turn_usage: list[Event] = []
        for event in loaded.events[loaded.inherited_event_count :]:
            etype, data = event.type, event.data
            if etype in (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT):
                turn_usage.append(event)
            kind = data.get("source", {}).get("kind") if etype == USER_MESSAGE else None
            if kind == "user":
                lines.append({"session": sid, "type": "prompt", "text": joined_text(data["content"])})
            elif kind in RELAYED:
                text = "\n".join(b.get("text", "") for b in data["content"] if b.get("type") == "text")
                lines.append({"session": sid, "type": "message", "from": kind, "text": text})
            elif (blocks := assistant_blocks_of(event)) is not None:
                reasoning = joined_text(blocks, "reasoning")
                if detail and reasoning.strip():
                    lines.append({"session": sid, "type": "reasoning", "text": reasoning})
                text = joined_text(blocks)
                if text:
                    lines.append({"session": sid, "type": "text", "text": text})
            elif etype == ASSISTANT_ATTEMPT:
                code = data.get("failure", {}).get("code")
                lines.append({"session": sid, "type": "attempt-failed", "code": code})
            elif etype == TOOL_CALL:
                lines.append(
                    {
                        "session": sid,
                        "type": "tool-call",
                        "name": data.get("name"),
                        "arguments": _arguments(data.get("arguments")),
                    }
                )
            elif (block := tool_result_of(event)) is not None:
                child = by_call.get((sid, block["toolCallId"]))
                if child is not None and child in sessions and child not in walked:
                    child_log = sessions[child]
                    lines.append(
                        {
                            "session": sid,
                            "type": "subagent-start",
                            "child": child,
                            "kind": child_kind(child_log),
                            "cut": child_log.inherited_event_count,
                            "label": _label(child_log),
                        }
                    )
                    walk(child)
                    lines.append({"session": sid, "type": "subagent-end", "child": child})
                lines.append(
                    {
                        "session": sid,
                        "type": "tool-result",
                        "isError": block["isError"],
                        "text": joined_text(block["content"]),
                    }
                )
            elif detail and (todos := todos_of(event)) is not None:
                lines.append({"session": sid, "type": "todos", "todos": todos})
            elif etype == TURN_END:
                line: Line = {"session": sid, "type": "turn-end", "reason": turn_end_kind(event)}
                if detail:
                    line["usage"] = usage_totals(turn_usage)
                turn_usage = []
                lines.append(line)

    walk(primary)
    return lines


def normalize(lines: list[Line], *, cwd: str | None) -> list[Line]:
    """Session ids → ``{{session:N}}`` by first appearance; cwd → ``{{cwd}}``."""
    tokens: dict[str, str] = {}

    def token(sid: str) -> str:
        return tokens.setdefault(sid, f"{{{{session:{len(tokens)}}}}}")

    for line in lines:
        token(line["session"])
        if "child" in line:
            token(line["child"])
    spellings = sorted({cwd} if cwd else set(), key=len, reverse=True)

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            for sid, tok in tokens.items():
                if sid in value:
                    value = value.replace(sid, tok)
            for spelling in spellings:
                value = value.replace(spelling, "{{cwd}}")
            return value
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    return [scrub(line) for line in lines]


def dumps_lines(lines: list[Line]) -> str:
    """One compact JSON object per line."""
    return "".join(jsonx.dumps(line).decode() + "\n" for line in lines)

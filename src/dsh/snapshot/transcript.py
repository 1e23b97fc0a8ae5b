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
from dataclasses import dataclass
from typing import Any

from dsh import jsonx
from dsh.events.descriptor import child_kind as session_child_kind
from dsh.events.descriptor import find_descriptor
from dsh.events.history import HistoryMessage
from dsh.session import timeline as tl
from dsh.session.timeline import RELAYED_SOURCES, SUBAGENT_TOOLS, Timeline, child_calls
from dsh.session.usage import Ledger
from dsh.store import LoadedSession

__all__ = [
    "RELAYED",
    "SUBAGENT_TOOLS",
    "Walk",
    "build_transcript",
    "child_kind",
    "children_by_call",
    "dumps_lines",
    "normalize",
    "original",
    "walk_transcript",
]

RELAYED = RELAYED_SOURCES
"""``user/message`` sources of messages one session sent another."""

Line = dict[str, Any]


def child_kind(loaded: LoadedSession) -> str:
    """``fork`` or ``spawn`` for a child session (``primary`` for a top-level one); the rule
    of :func:`dsh.events.descriptor.child_kind`."""
    return session_child_kind(loaded.header, loaded.own_events) or "primary"


def children_by_call(sessions: Mapping[str, LoadedSession]) -> dict[tuple[str, str], str]:
    """(parent id, tool call id) → child id, from delegation identity or creation order
    (:func:`dsh.session.timeline.child_calls`)."""
    return child_calls(sessions)


@dataclass(frozen=True, slots=True)
class Walk:
    """A transcript walk: its lines and what its fold spent."""

    lines: list[Line]
    ledgers: dict[str, Ledger]
    """Each walked session's own model calls (:attr:`dsh.session.timeline.SessionState.ledger`),
    for the sessions whose whole log the walk folded (no inherited prefix: their own events
    are all their events) — what :func:`dsh.session.spend.tree_spend` would fold again."""


def build_transcript(
    sessions: Mapping[str, LoadedSession], primary: str, *, detail: bool = False
) -> list[Line]:
    """The raw (not yet normalized) transcript lines of a run rooted at ``primary``
    (:func:`walk_transcript`'s lines)."""
    return walk_transcript(sessions, primary, detail=detail).lines


def walk_transcript(sessions: Mapping[str, LoadedSession], primary: str, *, detail: bool = False) -> Walk:
    """The raw (not yet normalized) transcript lines of a run rooted at ``primary``, and the
    ledgers its one fold of each session made (a caller reporting the run's spend passes them
    to :func:`dsh.session.spend.tree_spend` instead of folding the logs again).

    ``detail`` (the reading view of ``dsh log``) adds ``reasoning`` lines before an
    answer's text, a ``usage`` total (every settlement of that session's turn) to each
    ``turn-end``, ``todos`` lines, and a ``compaction`` line per compaction (its
    :meth:`~dsh.session.timeline.Compaction.record` and its ``originals``, each
    :func:`original`); recorded ``transcript.expected.jsonl`` files are built without it.
    """
    walker = _Walker(sessions, detail)
    walker.walk(primary)
    timeline = walker.timeline
    whole = (sid for sid in walker.walked if not sessions[sid].inherited_event_count)
    return Walk(walker.lines, {sid: timeline.state(sid).ledger for sid in whole})


class _Walker:
    """One transcript walk (a class, not closures that call each other: those were a
    reference cycle holding every log until the cyclic collector ran)."""

    def __init__(self, sessions: Mapping[str, LoadedSession], detail: bool) -> None:
        self.sessions = sessions
        self.detail = detail
        self.timeline = Timeline(child_calls(sessions))
        self.lines: list[Line] = []
        self.walked: set[str] = set()  # a parentSession cycle (a session its own child) is spliced once

    def walk(self, sid: str) -> None:
        self.walked.add(sid)
        loaded = self.sessions[sid]
        for event in loaded.own_events:
            for item in self.timeline.feed(sid, event):
                self.lines.extend(self.render(sid, item))

    def render(self, sid: str, item: tl.Item) -> list[Line]:
        detail, sessions = self.detail, self.sessions
        match item:
            case tl.Prompt():
                return [{"session": sid, "type": "prompt", "text": item.text}]
            case tl.Relayed() if item.source in RELAYED:
                return [
                    {"session": sid, "type": "message", "from": item.source, "text": "\n".join(item.parts)}
                ]
            case tl.Reasoning() if detail and item.text.strip():
                return [{"session": sid, "type": "reasoning", "text": item.text}]
            case tl.Answer() if item.text:
                return [{"session": sid, "type": "text", "text": item.text}]
            case tl.Attempt():
                return [{"session": sid, "type": "attempt-failed", "code": item.code}]
            case tl.ToolCall():
                return [{"session": sid, "type": "tool-call", "name": item.name, "arguments": item.parsed}]
            case tl.ToolResult():
                out: list[Line] = []
                child = item.child
                if child is not None and child in sessions and child not in self.walked:
                    child_log = sessions[child]
                    out.append(
                        {
                            "session": sid,
                            "type": "subagent-start",
                            "child": child,
                            "kind": child_kind(child_log),
                            "cut": child_log.inherited_event_count,
                            "label": _label(child_log),
                        }
                    )
                    self.lines.extend(out)
                    self.walk(child)
                    out = [{"session": sid, "type": "subagent-end", "child": child}]
                out.append(
                    {"session": sid, "type": "tool-result", "isError": item.is_error, "text": item.text}
                )
                return out
            case tl.Compaction() if detail:
                return [{"session": sid, **item.record(), "originals": [original(m) for m in item.originals]}]
            case tl.Todos() if detail:
                return [{"session": sid, "type": "todos", "todos": list(item.todos)}]
            case tl.TurnEnd():
                line: Line = {"session": sid, "type": "turn-end", "reason": item.reason}
                if detail:
                    line["usage"] = item.usage
                return [line]
            case _:
                return []


def original(message: HistoryMessage) -> Line:
    """A message a compaction replaced, as a ``compaction`` line lists it (``originals``)."""
    return {
        "seq": message.seq,
        "role": message.role,
        "source": message.source,
        "text": message.text,
        "reasoning": message.reasoning,
        "toolCalls": [
            {"id": c.call_id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ],
        "toolResults": [
            {"toolCallId": r.call_id, "text": r.text, "isError": r.is_error} for r in message.tool_results
        ],
    }


def _label(loaded: LoadedSession) -> str | None:
    descriptor = find_descriptor(loaded.own_events)
    return descriptor.label if descriptor is not None else None


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
    return [_scrub(line, tokens, spellings) for line in lines]


def _scrub(value: Any, tokens: Mapping[str, str], spellings: list[str]) -> Any:
    """``value`` with each session id → its token and each cwd spelling → ``{{cwd}}``."""
    if isinstance(value, str):
        for sid, tok in tokens.items():
            if sid in value:
                value = value.replace(sid, tok)
        for spelling in spellings:
            value = value.replace(spelling, "{{cwd}}")
        return value
    if isinstance(value, dict):
        return {k: _scrub(v, tokens, spellings) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, tokens, spellings) for v in value]
    return value


def dumps_lines(lines: list[Line]) -> str:
    """One compact JSON object per line."""
    return "".join(jsonx.dumps(line).decode() + "\n" for line in lines)

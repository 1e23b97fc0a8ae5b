"""Session updates: how one dsh session's events and stream chunks look to an ACP client.

Two profiles. ``full`` streams reasoning as ``agent_thought_chunk`` and text as
``agent_message_chunk`` as the deltas arrive, shows every tool call as ``tool_call`` /
``tool_call_update`` (status and result), names the child session and its kind on a
subagent delegation, sends the task list as a ``plan`` at every ``todo/write``, and ends
each turn with ``usage_update``. ``dsh-compat`` is exactly
the original's automation subset: one ``agent_message_chunk`` per non-empty text block of
each committed assistant message of the top-level session, nothing else.

The mapping is pure: :class:`LiveUpdates` turns the live feed into update models, and
:func:`history_updates` turns a stored log into the updates ``session/load`` replays.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    SessionInfoUpdate,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from dsh import jsonx
from dsh.events import Event
from dsh.events.chunks import Chunk, Usage
from dsh.events.descriptor import parse_descriptor
from dsh.events.history import project_event
from dsh.events.messages import Block, Message, Source
from dsh.events.payloads import (
    ToolResultBlock,
    message_of,
    result_block,
    tool_call_of,
    tool_result_of,
    usage_of,
)
from dsh.events.todos import todos_of
from dsh.events.vocabulary import (
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    SESSION_TITLE,
    SUBAGENT_DESCRIPTOR,
    TOOL_RESULT,
    TURN_END,
)
from dsh.tools import ToolPresentation, ToolRegistry

Profile = Literal["full", "dsh-compat"]
PROFILES: Final[tuple[Profile, ...]] = ("full", "dsh-compat")

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | UsageUpdate
    | SessionInfoUpdate
    | AgentPlanUpdate
)
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
ToolContent = list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent]

DEFAULT_CONTEXT_WINDOW: Final = 131_072
"""``usage_update.size`` when nothing better is known: DeepSeek's 128K-token context."""

_TITLE_LIMIT: Final = 120


@dataclass(frozen=True, slots=True)
class Delegation:
    """A subagent a tool call started: the child session and its kind (spawn or fork)."""

    child_id: str
    kind: str

    def content(self) -> ContentToolCallContent:
        return _text_content(f"{self.kind} subagent: child session {self.child_id}")

    def meta(self) -> dict[str, Any]:
        return {"dsh/subagent": {"sessionId": self.child_id, "kind": self.kind}}


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=_text(text))


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TITLE_LIMIT else line[: _TITLE_LIMIT - 1] + "…"


def parse_arguments(raw: Any) -> Any:
    """A tool call's arguments as JSON (``""`` is ``{}``); unparseable text is kept as text."""
    if not isinstance(raw, str):
        return raw
    if not raw.strip():
        return {}
    try:
        return jsonx.loads(raw)
    except jsonx.JSONDecodeError:
        return {"arguments": raw}


def tool_title(name: str, presentation: ToolPresentation) -> str:
    """A call's title: the tool's own, on one line and at most 120 characters, else its name."""
    return _one_line(presentation.title) if presentation.title else name


def tool_locations(presentation: ToolPresentation, cwd: str) -> list[ToolCallLocation] | None:
    """The files a call touches, as absolute paths."""
    out: list[ToolCallLocation] = []
    for location in presentation.locations:
        full = os.path.normpath(os.path.join(cwd, location.path))
        line = location.line
        out.append(ToolCallLocation(path=full, line=line) if line else ToolCallLocation(path=full))
    return out or None


def tool_start(
    call_id: str, name: str, raw_arguments: Any, cwd: str, *, status: ToolStatus, tools: ToolRegistry | None
) -> ToolCallStart:
    """The ``tool_call`` update of a call; its kind, title and files come from the tool itself
    (:meth:`~dsh.tools.ToolRegistry.present`; no registry, or an unknown tool: ``other``)."""
    args = parse_arguments(raw_arguments)
    raw: Mapping[str, Any] = args if isinstance(args, dict) else {}
    presentation = tools.present(name, raw) if tools is not None else ToolPresentation("other")
    start = ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=tool_title(name, presentation),
        kind=presentation.kind,
        status=status,
        raw_input=args,
    )
    locations = tool_locations(presentation, cwd)
    if locations:
        start.locations = locations
    return start


def tool_finish(block: ToolResultBlock | None, delegation: Delegation | None) -> ToolCallProgress:
    """The update that settles a tool call from its ``tool-result`` block."""
    content: ToolContent = [delegation.content()] if delegation else []
    for inner in block["content"] if block is not None else []:
        if inner.get("type") == "text":
            content.append(_text_content(str(inner.get("text", ""))))
    update = ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=block["toolCallId"] if block is not None else "",
        status="failed" if block is not None and block["isError"] else "completed",
        content=content,
    )
    if delegation:
        update.field_meta = delegation.meta()
    return update


def message_chunks(message: Message, profile: Profile, *, with_ids: bool) -> list[Update]:
    """The updates of one assistant message's blocks (committed, or replayed on load)."""
    out: list[Update] = []
    message_id = message.get("id") if with_ids and isinstance(message.get("id"), str) else None
    for block in message.get("content", []):
        kind = block.get("type") if isinstance(block, dict) else None
        text = block.get("text") if isinstance(block, dict) else None
        if not isinstance(text, str) or not text:
            continue
        if kind == "text":
            out.append(
                AgentMessageChunk(
                    session_update="agent_message_chunk", content=_text(text), message_id=message_id
                )
            )
        elif kind == "reasoning" and profile == "full":
            out.append(
                AgentThoughtChunk(
                    session_update="agent_thought_chunk", content=_text(text), message_id=message_id
                )
            )
    return out


def plan_update(event: Event) -> AgentPlanUpdate | None:
    """The ACP ``plan`` a ``todo/write`` sets (``full`` profile; the original sends none)."""
    todos = todos_of(event)
    if todos is None:
        return None
    entries = [PlanEntry(content=t["content"], priority="medium", status=t["status"]) for t in todos]
    return AgentPlanUpdate(session_update="plan", entries=entries)


def context_tokens(usage: Usage | None) -> int | None:
    """Tokens in context after one model call: input + cached input + output."""
    if usage is None:
        return None
    counts: list[object] = [usage.get("inputTokens"), usage.get("cacheReadTokens"), usage.get("outputTokens")]
    if not any(type(c) is int for c in counts):
        return None
    return sum(c for c in counts if type(c) is int)


def descriptor_delegation(event: Event) -> tuple[str, str, str] | None:
    """``(parent session, call id, kind)`` from a ``subagent/descriptor`` event."""
    descriptor = parse_descriptor(event)
    if descriptor is None or descriptor.parent_session is None or descriptor.call_id is None:
        return None
    return descriptor.parent_session, descriptor.call_id, descriptor.provider or "spawn"


class LiveUpdates:
    """Maps the live feed of one ACP session (its dsh session and its subagents) to updates."""

    def __init__(
        self,
        profile: Profile,
        root: str,
        cwd: str,
        *,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        tools: ToolRegistry | None = None,
    ) -> None:
        self.profile = profile
        self.root = root
        self.cwd = cwd
        self.tools = tools
        self.context_window = context_window
        self._delegations: dict[str, Delegation] = {}
        self._context: int | None = None

    def chunk(self, session_id: str, chunk: Chunk) -> list[Update]:
        if self.profile != "full" or session_id != self.root:
            return []
        text = chunk.get("text")
        if not isinstance(text, str) or not text:
            return []
        if chunk["type"] == "text-delta":
            return [AgentMessageChunk(session_update="agent_message_chunk", content=_text(text))]
        if chunk["type"] == "reasoning-delta":
            return [AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(text))]
        return []

    def event(self, session_id: str, event: Event) -> list[Update]:
        if session_id != self.root:
            return self._descendant_event(session_id, event)
        if self.profile == "dsh-compat":
            if event.type == ASSISTANT_MESSAGE:
                message = message_of(event)
                return [] if message is None else message_chunks(message, self.profile, with_ids=False)
            return []
        if event.type in (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT):
            used = context_tokens(usage_of(event))
            if used is not None:
                self._context = used
        elif (call := tool_call_of(event)) is not None:
            return [tool_start(call["callId"], call["name"], call["arguments"], self.cwd,
                               status="in_progress", tools=self.tools)]  # fmt: skip
        elif event.type == TOOL_RESULT:
            block = tool_result_of(event)
            return [tool_finish(block, self._delegations.get(block["toolCallId"] if block else ""))]
        elif (
            event.type == SESSION_TITLE
            and isinstance(event.data, dict)
            and isinstance(event.data.get("title"), str)
        ):
            return [SessionInfoUpdate(session_update="session_info_update", title=event.data["title"])]
        elif (plan := plan_update(event)) is not None:
            return [plan]
        elif event.type == TURN_END and self._context is not None:
            used, self._context = self._context, None
            return [
                UsageUpdate(session_update="usage_update", used=used, size=max(self.context_window, used))
            ]
        return []

    def _descendant_event(self, session_id: str, event: Event) -> list[Update]:
        if self.profile != "full" or event.type != SUBAGENT_DESCRIPTOR:
            return []
        found = descriptor_delegation(event)
        if found is None or found[0] != self.root:
            return []
        call_id, delegation = found[1], Delegation(session_id, found[2])
        self._delegations[call_id] = delegation
        update = ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call_id, content=[delegation.content()]
        )
        update.field_meta = delegation.meta()
        return [update]


def history_updates(
    events: Sequence[Event],
    profile: Profile,
    cwd: str,
    delegations: Mapping[str, Delegation] | None = None,
    tools: ToolRegistry | None = None,
) -> list[Update]:
    """The updates ``session/load`` replays: the session's model-visible history.

    User prompts become ``user_message_chunk``; assistant messages become message chunks
    (and, in ``full``, thought chunks plus a ``tool_call`` per tool-call block); tool
    results settle their calls (``full`` only). Chunks carry the logged message id. ``tools``
    says how each call looks (the session's registry).
    """
    delegations = delegations or {}
    out: list[Update] = []
    for event in events:
        plan = plan_update(event) if profile == "full" else None
        if plan is not None:
            out.append(plan)
        message = project_event(event)
        if message is None:
            continue
        source: Source | dict[str, Any] = message.get("source") or {}
        if event.type == ASSISTANT_MESSAGE:
            out.extend(message_chunks(message, profile, with_ids=True))
            if profile == "full":
                out.extend(_history_tool_starts(message.get("content", []), cwd, delegations, tools))
        elif event.type == TOOL_RESULT:
            if profile == "full":
                block = result_block(message)
                out.append(tool_finish(block, delegations.get(block["toolCallId"] if block else "")))
        elif source.get("kind") == "user":
            out.extend(_user_chunks(message))
    return out


def _history_tool_starts(
    blocks: Iterable[Block], cwd: str, delegations: Mapping[str, Delegation], tools: ToolRegistry | None
) -> list[Update]:
    out: list[Update] = []
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") != "tool-call":
            continue
        call_id = str(block.get("id", ""))
        name = str(block.get("name", ""))
        start = tool_start(call_id, name, block.get("arguments"), cwd, status="pending", tools=tools)
        delegation = delegations.get(call_id)
        if delegation:
            start.content = [delegation.content()]
            start.field_meta = delegation.meta()
        out.append(start)
    return out


def _user_chunks(message: Message) -> list[Update]:
    out: list[Update] = []
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    for block in message.get("content", []):
        if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
            text = _text(str(block["text"]))
            out.append(
                UserMessageChunk(session_update="user_message_chunk", content=text, message_id=message_id)
            )
    return out

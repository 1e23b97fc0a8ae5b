"""Session updates: how one dsh session's events and stream chunks look to an ACP client.

Two profiles. ``full`` streams reasoning as ``agent_thought_chunk`` and text as
``agent_message_chunk`` as the deltas arrive, shows every tool call as ``tool_call`` /
``tool_call_update`` (status and result), names the child session and its kind on a
subagent delegation, sends the task list as a ``plan`` at every ``todo/write``, and ends
each turn with ``usage_update``, and shows each compaction as a finished ``tool_call`` card
(:func:`compaction_update`). ``dsh-compat`` is exactly
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
    AvailableCommandsUpdate,
    ContentToolCallContent,
    Cost,
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
from dsh.session import timeline as tl
from dsh.session.prices import PriceTable
from dsh.session.timeline import Timeline
from dsh.tools import ToolPresentation, ToolRegistry

Profile = Literal["full", "dsh-compat"]
PROFILES: Final[tuple[Profile, ...]] = ("full", "dsh-compat")

Update = (
    AgentMessageChunk
    | AvailableCommandsUpdate
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


def tool_finish(result: tl.ToolResult, delegation: Delegation | None) -> ToolCallProgress:
    """The update that settles a tool call from its result."""
    content: ToolContent = [delegation.content()] if delegation else []
    for inner in result.content:
        if inner.get("type") == "text":
            content.append(_text_content(str(inner.get("text", ""))))
    update = ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=result.call_id,
        status="failed" if result.is_error else "completed",
        content=content,
    )
    if delegation:
        update.field_meta = delegation.meta()
    return update


def message_chunks(answer: tl.Answer, profile: Profile, *, with_ids: bool) -> list[Update]:
    """The updates of one assistant message's blocks (committed, or replayed on load)."""
    out: list[Update] = []
    message_id = answer.message_id if with_ids else None
    for part in answer.parts:
        if part.kind == "text":
            out.append(
                AgentMessageChunk(
                    session_update="agent_message_chunk", content=_text(part.text), message_id=message_id
                )
            )
        elif profile == "full":
            out.append(
                AgentThoughtChunk(
                    session_update="agent_thought_chunk", content=_text(part.text), message_id=message_id
                )
            )
    return out


def plan_update(todos: tl.Todos) -> AgentPlanUpdate:
    """The ACP ``plan`` a ``todo/write`` sets (``full`` profile; the original sends none)."""
    entries = [PlanEntry(content=t["content"], priority="medium", status=t["status"]) for t in todos.todos]
    return AgentPlanUpdate(session_update="plan", entries=entries)


def compaction_update(item: tl.Compaction) -> ToolCallStart:
    """A compaction as one settled ``tool_call`` (``full`` profile; the original sends none).

    A client such as Zed shows a tool call as a collapsed card: the title is the compaction's
    headline (``compacted turns 1–2: 5 messages, 9,812 → 640 tokens``) and the content — the
    summary the model continues from — is one click away; a failed attempt is a ``failed``
    card saying the history is unchanged and why. Not a message chunk: the summary is not the
    agent speaking to the user, and a thought chunk would merge into the next reasoning.
    ``_meta["dsh/compaction"]`` is the record (``Compaction.record()``) without ``sessionId``
    (the update names its session).
    """
    body = item.summary if item.ok and item.summary else item.headline
    start = ToolCallStart(
        session_update="tool_call",
        tool_call_id=f"compaction-{item.compaction_id}",
        title=_one_line(item.headline),
        kind="other",
        status="completed" if item.ok else "failed",
        content=[_text_content(body)],
    )
    start.field_meta = {"dsh/compaction": {k: v for k, v in item.record().items() if k != "sessionId"}}
    return start


def context_tokens(usage: Usage | None) -> int | None:
    """Tokens in context after one model call: input + cached input + output."""
    if usage is None:
        return None
    counts: list[object] = [usage.get("inputTokens"), usage.get("cacheReadTokens"), usage.get("outputTokens")]
    if not any(type(c) is int for c in counts):
        return None
    return sum(c for c in counts if type(c) is int)


def child_delegation(started: tl.ChildStarted) -> Delegation:
    """The delegation a child's descriptor names (its kind: ``ChildStarted.provider_kind``)."""
    return Delegation(started.session, started.provider_kind)


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
        prices: PriceTable | None = None,
    ) -> None:
        self.profile = profile
        self.prices = prices if prices is not None else PriceTable()

        self.root = root
        self.cwd = cwd
        self.tools = tools
        self.context_window = context_window
        self.timeline = Timeline()
        """The fold of the feed (the ACP session and its subagents)."""
        self._delegations: dict[str, Delegation] = {}
        self._context: int | None = None

    def chunk(self, session_id: str, chunk: Chunk) -> list[Update]:
        delta = self.timeline.chunk(session_id, chunk)
        if self.profile != "full" or session_id != self.root or delta is None or not delta.text:
            return []
        if delta.kind == "text":
            return [AgentMessageChunk(session_update="agent_message_chunk", content=_text(delta.text))]
        return [AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(delta.text))]

    def event(self, session_id: str, event: Event) -> list[Update]:
        return self.render(session_id, self.timeline.feed(session_id, event))

    def cost(self) -> Cost | None:
        """The cumulative cost of every call fed so far (subagents' included, each once), in
        US dollars; ``None`` when some usage has no price (ACP's cost is then left out)."""
        usd = self.prices.cost(self.timeline.spent()).usd
        return None if usd is None else Cost(amount=float(usd), currency="USD")

    def render(self, session_id: str, items: list[tl.Item]) -> list[Update]:
        """The updates of the items one event of ``session_id`` made."""
        return [update for item in items for update in self._item(session_id, item)]

    def _item(self, session_id: str, item: tl.Item) -> list[Update]:
        if session_id != self.root:
            return self._descendant(item)
        if self.profile == "dsh-compat":
            return message_chunks(item, self.profile, with_ids=False) if isinstance(item, tl.Answer) else []
        match item:
            case tl.Answer() | tl.Attempt():
                used = context_tokens(item.usage)
                if used is not None:
                    self._context = used
            case tl.ToolCall():
                return [tool_start(item.call_id, item.name, item.arguments, self.cwd,
                                   status="in_progress", tools=self.tools)]  # fmt: skip
            case tl.ToolResult():
                return [tool_finish(item, self._delegations.get(item.call_id))]
            case tl.Title():
                return [SessionInfoUpdate(session_update="session_info_update", title=item.title)]
            case tl.Todos():
                return [plan_update(item)]
            case tl.Compaction():
                return [compaction_update(item)]
            case tl.TurnEnd() if self._context is not None:
                used, self._context = self._context, None
                size = max(self.context_window, used)
                return [UsageUpdate(session_update="usage_update", used=used, size=size, cost=self.cost())]
            case _:
                pass
        return []

    def _descendant(self, item: tl.Item) -> list[Update]:
        if self.profile != "full" or not isinstance(item, tl.ChildStarted):
            return []
        if item.parent != self.root or item.call_id is None:
            return []
        delegation = child_delegation(item)
        self._delegations[item.call_id] = delegation
        update = ToolCallProgress(
            session_update="tool_call_update", tool_call_id=item.call_id, content=[delegation.content()]
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
    results settle their calls (``full`` only); each compaction is its card at its
    checkpoint (``full`` only; the replaced messages replay where they happened). Chunks
    carry the logged message id. ``tools`` says how each call looks (the session's registry).
    """
    delegations = delegations or {}
    out: list[Update] = []
    timeline = Timeline()
    for event in events:
        for item in timeline.feed("", event):
            out.extend(_history_item(item, profile, cwd, delegations, tools))
    return out


def _history_item(
    item: tl.Item,
    profile: Profile,
    cwd: str,
    delegations: Mapping[str, Delegation],
    tools: ToolRegistry | None,
) -> list[Update]:
    if isinstance(item, tl.Todos):
        return [plan_update(item)] if profile == "full" else []
    if isinstance(item, tl.Compaction):
        return [compaction_update(item)] if profile == "full" else []
    if item.event.surface_op != "append":  # only what the model saw (``dsh.events.history``)
        return []
    if isinstance(item, tl.Answer):
        chunks = message_chunks(item, profile, with_ids=True)
        return (
            chunks + _history_tool_starts(item.calls, cwd, delegations, tools)
            if profile == "full"
            else chunks
        )
    if isinstance(item, tl.ToolResult):
        return [tool_finish(item, delegations.get(item.call_id))] if profile == "full" else []
    if isinstance(item, tl.Prompt):
        return [
            UserMessageChunk(
                session_update="user_message_chunk", content=_text(text), message_id=item.message_id
            )
            for text in item.parts
        ]
    return []


def _history_tool_starts(
    calls: Iterable[tl.CallPart], cwd: str, delegations: Mapping[str, Delegation], tools: ToolRegistry | None
) -> list[Update]:
    out: list[Update] = []
    for call in calls:
        start = tool_start(call.call_id, call.name, call.arguments, cwd, status="pending", tools=tools)
        delegation = delegations.get(call.call_id)
        if delegation:
            start.content = [delegation.content()]
            start.field_meta = delegation.meta()
        out.append(start)
    return out

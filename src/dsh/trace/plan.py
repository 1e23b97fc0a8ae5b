"""The span plan: a session tree's log read as OpenTelemetry GenAI spans (pure, no SDK).

One ``invoke_agent`` span per turn, one ``chat`` span per model call (its failed attempts as
span events), one ``execute_tool`` span per tool call. A child session's turns are children
of the parent's ``execute_tool`` span of the ``subagent`` / ``subagent_fork`` call that
started it, all in the root's trace. Span times are the logged times; ids are derived from
the session id and the seq of the event that opens the span, so exporting a session twice
gives the same ids. What the log leaves open (a turn without ``turn/end``, a call without its
result) is planned up to the session's last event and marked ``open``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from dsh import jsonx
from dsh.events import Event
from dsh.events.descriptor import child_kind, find_descriptor
from dsh.events.payloads import (
    assistant_blocks_of,
)
from dsh.session import timeline as tl
from dsh.session.prices import PriceTable
from dsh.session.timeline import Timeline, child_calls
from dsh.session.usage import Route, Tokens
from dsh.store import LoadedSession

SpanKind = Literal["internal", "client"]
Attribute = str | int | bool | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """A point in a span's life (a failed model attempt)."""

    name: str
    time_ms: int
    attributes: dict[str, Attribute]


@dataclass(frozen=True, slots=True)
class PlannedSpan:
    """One span, ready for any exporter: ids as hex, times in epoch milliseconds."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: SpanKind
    start_ms: int
    end_ms: int
    attributes: dict[str, Attribute]
    events: tuple[SpanEvent, ...] = ()
    error: str | None = None
    """The status description of a failed span (``None``: not an error)."""
    open: bool = False
    """The log does not close this span (a torn tail, a turn still running)."""


def trace_id_of(root_id: str) -> str:
    """The trace of a session tree: the root's UUID as 32 hex digits (hashed if not a UUID)."""
    try:
        value = uuid.UUID(root_id).hex
    except ValueError:
        value = hashlib.sha256(root_id.encode()).hexdigest()[:32]
    return value if int(value, 16) else "1".rjust(32, "0")


def span_id_of(session_id: str, seq: int, role: str) -> str:
    """A stable 16-hex-digit span id for the span ``role`` opened at ``seq`` of a session."""
    digest = hashlib.sha256(f"{session_id}:{seq}:{role}".encode()).hexdigest()[:16]
    return digest if int(digest, 16) else "1".rjust(16, "0")


def provider_name(provider: str | None) -> str:
    """``gen_ai.provider.name``: the well-known value for a logged provider, else the provider."""
    text = (provider or "").lower()
    for known in ("deepseek", "openai", "anthropic"):
        if known in text:
            return known
    return provider or "unknown"


_Open = tuple[Event, dict[str, Attribute]]
"""A tool call without its result yet: its event and its span's attributes."""


@dataclass(slots=True)
class _Call:
    """A model call being read: from its step's start to its settlement."""

    span_id: str
    start_ms: int
    turn: int
    step: int
    attempts: list[SpanEvent] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """``content``: put prompts, answers, tool arguments and results on the spans."""

    content: bool = False
    agent_name: str = "dsh"
    prices: PriceTable = field(default_factory=PriceTable)
    """Prices each chat span's usage (``dsh.cost.usd``; none when the model has no price)."""


class _SessionPlanner:
    """Reads one session's own events into spans (children are linked by the tree)."""

    def __init__(
        self,
        sid: str,
        loaded: LoadedSession,
        trace_id: str,
        parent_span: str | None,
        options: PlanOptions,
    ) -> None:
        self.sid, self.loaded, self.trace_id, self.options = sid, loaded, trace_id, options
        self.parent_span = parent_span
        self.spans: list[PlannedSpan] = []
        self.tool_spans: dict[str, str] = {}
        """call id → its ``execute_tool`` span id (where a child started by it hangs)."""
        self._model = ""
        self._provider = "unknown"
        self._route: Route = (None, None)
        descriptor = find_descriptor(loaded.own_events)
        kind = child_kind(loaded.header, loaded.own_events)
        self._agent = (descriptor.label if descriptor and descriptor.label else None) or (
            f"{options.agent_name}-{kind}" if kind else options.agent_name
        )
        self._agent_attrs: dict[str, Attribute] = {}
        if kind is not None:
            self._agent_attrs["dsh.child.kind"] = kind
        if kind == "fork":
            self._agent_attrs["dsh.fork.cut"] = loaded.inherited_event_count

    def _base(self, operation: str) -> dict[str, Attribute]:
        return {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": self._provider,
            "gen_ai.conversation.id": self.sid,
        }

    def plan(self) -> list[PlannedSpan]:
        cut = self.loaded.inherited_event_count
        timeline = Timeline()
        timeline.begin(self.sid, cut=cut)
        for event in self.loaded.events[:cut]:
            for item in timeline.feed(self.sid, event):
                if isinstance(item, tl.Request):
                    self._header(item)  # a fork child's inherited header is in force at its cut
        own = self.loaded.own_events
        last_ms = max((e.time for e in own), default=self.loaded.header.created_at)
        turn: tuple[tl.TurnStart, list[PlannedSpan]] | None = None
        call: _Call | None = None
        tools: dict[str, tuple[Event, dict[str, Attribute]]] = {}
        for event in own:
            for item in timeline.feed(self.sid, event):
                if isinstance(item, tl.Request):
                    self._header(item)
                elif isinstance(item, tl.TurnStart):
                    turn = (item, [])
                elif turn is None:
                    continue
                elif isinstance(item, tl.Step):
                    call = _Call(
                        span_id_of(self.sid, event.seq, "chat"), event.time, item.turn or 0, item.step or 0
                    )
                elif isinstance(item, tl.Attempt) and call is not None:
                    found: dict[str, Attribute] = {
                        "error.type": str(item.code or "") or "error",
                        "dsh.error.message": str(item.message) if item.message is not None else "",
                    }
                    call.attempts.append(SpanEvent("dsh.model.attempt_failed", event.time, found))
                elif isinstance(item, tl.Answer) and call is not None:
                    turn[1].append(self._chat(call, item))
                    call = None
                elif isinstance(item, tl.ToolCall):
                    self._tool_call(item, tools)
                elif isinstance(item, tl.ToolResult):
                    self._tool_result(item, tools, turn[1])
                elif isinstance(item, tl.TurnEnd):
                    turn[1].extend(self._open_tools(tools, event.time))
                    self._turn(turn[0], item, turn[1], last_ms)
                    turn, call = None, None
        if turn is not None:  # the log ends inside a turn
            if call is not None:
                turn[1].append(self._chat(call, None, last_ms))
            turn[1].extend(self._open_tools(tools, last_ms))
            self._turn(turn[0], None, turn[1], last_ms)
        return self.spans

    def _header(self, request: tl.Request) -> None:
        self._model = request.model or self._model
        self._route = (request.model or self._route[0], request.provider or self._route[1])
        if request.provider:
            self._provider = provider_name(request.provider)

    def _chat(self, call: _Call, answer: tl.Answer | None, last_ms: int = 0) -> PlannedSpan:
        attrs = self._base("chat")
        attrs["gen_ai.request.model"] = self._model
        attrs["gen_ai.response.model"] = self._model
        attrs["dsh.turn"], attrs["dsh.step"] = call.turn, call.step
        error = None
        if answer is not None:
            usage = answer.usage or {}
            tokens = Tokens.of(usage)
            attrs["gen_ai.usage.input_tokens"] = tokens.prompt
            attrs["gen_ai.usage.output_tokens"] = tokens.output
            if "cacheReadTokens" in usage:
                attrs["gen_ai.usage.cache_read.input_tokens"] = tokens.cache_read
            if "cacheWriteTokens" in usage:
                attrs["gen_ai.usage.cache_creation.input_tokens"] = tokens.cache_write
            if "reasoningTokens" in usage:
                attrs["dsh.usage.reasoning_tokens"] = tokens.reasoning
            cost = self.options.prices.price(self._route, tokens, answer.event.time).usd
            if cost is not None:
                attrs["dsh.cost.usd"] = str(cost)  # a decimal string: exact, no float rounding
            attrs["gen_ai.response.finish_reasons"] = (
                ("cancelled",) if answer.interrupted else ("tool_calls",) if answer.calls else ("stop",)
            )
            if self.options.content:
                blocks = assistant_blocks_of(answer.event) or []
                attrs["gen_ai.output.messages"] = jsonx.dumps_sorted(
                    [{"role": "assistant", "parts": [_part(b) for b in blocks]}]
                )
        elif call.attempts:
            error = "every attempt of this model call failed"
        end = answer.event.time if answer is not None else max(last_ms, call.start_ms)
        return PlannedSpan(
            f"chat {self._model}".strip(),
            self.trace_id,
            call.span_id,
            None,
            "client",
            call.start_ms,
            max(end, call.start_ms),
            attrs,
            tuple(call.attempts),
            error,
            open=answer is None,
        )

    def _tool_call(self, call: tl.ToolCall, tools: dict[str, tuple[Event, dict[str, Attribute]]]) -> None:
        attrs = self._base("execute_tool")
        attrs["gen_ai.tool.name"] = call.name
        attrs["gen_ai.tool.call.id"] = call.call_id
        attrs["gen_ai.tool.type"] = "function"
        if self.options.content:
            attrs["gen_ai.tool.call.arguments"] = call.arguments
        self.tool_spans[call.call_id] = span_id_of(self.sid, call.event.seq, "tool")
        tools[call.call_id] = (call.event, attrs)

    def _tool_result(
        self,
        result: tl.ToolResult,
        tools: dict[str, tuple[Event, dict[str, Attribute]]],
        out: list[PlannedSpan],
    ) -> None:
        if result.call_id not in tools:
            return
        started, attrs = tools.pop(result.call_id)
        if self.options.content:
            attrs["gen_ai.tool.call.result"] = result.text
        error = None
        if result.is_error:
            attrs["error.type"] = "tool_error"
            error = result.text[:200] or "the tool reported an error"
        out.append(self._tool_span(started, attrs, result.event.time, error, open_=False))

    def _tool_span(
        self, started: Event, attrs: dict[str, Attribute], end_ms: int, error: str | None, *, open_: bool
    ) -> PlannedSpan:
        name = f"execute_tool {attrs['gen_ai.tool.name']}"
        span_id = span_id_of(self.sid, started.seq, "tool")
        return PlannedSpan(
            name,
            self.trace_id,
            span_id,
            None,
            "internal",
            started.time,
            max(end_ms, started.time),
            attrs,
            (),
            error,
            open_,
        )

    def _open_tools(
        self, tools: dict[str, tuple[Event, dict[str, Attribute]]], end_ms: int
    ) -> list[PlannedSpan]:
        out = [self._tool_span(e, a, end_ms, None, open_=True) for e, a in tools.values()]
        tools.clear()
        return out

    def _turn(
        self, start: tl.TurnStart, end: tl.TurnEnd | None, inner: list[PlannedSpan], last_ms: int
    ) -> None:
        turn_id = span_id_of(self.sid, start.event.seq, "turn")
        attrs = self._base("invoke_agent")
        attrs["gen_ai.agent.name"] = self._agent
        attrs["gen_ai.agent.id"] = self.sid
        if self._model:
            attrs["gen_ai.request.model"] = self._model
        attrs["dsh.turn"] = start.turn
        attrs.update(self._agent_attrs)
        error = None
        if end is not None:
            kind = end.reason or "completed"
            attrs["dsh.turn.end"] = kind
            if kind in ("error", "interrupted"):
                failure = end.failure if end.reason else None
                message = failure.get("message") if failure else None
                error = str(message) if message is not None else f"the turn ended {kind}"
        end_ms = end.event.time if end is not None else last_ms
        self.spans.append(
            PlannedSpan(
                f"invoke_agent {self._agent}",
                self.trace_id,
                turn_id,
                self.parent_span,
                "internal",
                start.event.time,
                max(end_ms, start.event.time),
                attrs,
                (),
                error,
                open=end is None,
            )
        )
        for span in inner:
            self.spans.append(_reparent(span, turn_id))


def _reparent(span: PlannedSpan, parent: str) -> PlannedSpan:
    return PlannedSpan(
        span.name,
        span.trace_id,
        span.span_id,
        parent,
        span.kind,
        span.start_ms,
        span.end_ms,
        span.attributes,
        span.events,
        span.error,
        span.open,
    )


def _part(block: Mapping[str, object]) -> dict[str, object]:
    if block.get("type") == "tool-call":
        return {
            "type": "tool_call",
            "id": block.get("id"),
            "name": block.get("name"),
            "arguments": block.get("arguments"),
        }
    if block.get("type") == "reasoning":
        return {"type": "reasoning", "content": block.get("text", "")}
    return {"type": "text", "content": block.get("text", "")}


def plan_spans(
    sessions: Mapping[str, LoadedSession], root: str, options: PlanOptions | None = None
) -> list[PlannedSpan]:
    """Every span of the tree rooted at ``root`` (``sessions`` holds it and its descendants),
    parents before children."""
    options = options or PlanOptions()
    trace_id = trace_id_of(root)
    by_call = child_calls(sessions)
    out: list[PlannedSpan] = []
    pending: list[tuple[str, str | None]] = [(root, None)]
    seen: set[str] = set()
    while pending:
        sid, parent_span = pending.pop(0)
        if sid in seen or sid not in sessions:
            continue
        seen.add(sid)
        planner = _SessionPlanner(sid, sessions[sid], trace_id, parent_span, options)
        out.extend(planner.plan())
        for (parent, call_id), child in sorted(by_call.items()):
            if parent == sid:
                pending.append((child, planner.tool_spans.get(call_id)))
    return out


def plan_of(spans: Sequence[PlannedSpan]) -> list[tuple[int, str]]:
    """The tree of ``spans`` as ``(depth, name)`` rows, each span followed by its children in
    plan order (for goldens and the terminal)."""
    kids: dict[str | None, list[PlannedSpan]] = {}
    known = {span.span_id for span in spans}
    for span in spans:
        kids.setdefault(span.parent_id if span.parent_id in known else None, []).append(span)
    rows: list[tuple[int, str]] = []
    stack = [(0, span) for span in reversed(kids.get(None, []))]
    while stack:
        depth, span = stack.pop()
        rows.append((depth, span.name))
        stack.extend((depth + 1, kid) for kid in reversed(kids.get(span.span_id, [])))
    return rows

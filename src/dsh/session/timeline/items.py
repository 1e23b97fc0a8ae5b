"""The read model's vocabulary: ``Item``, a tagged union of frozen dataclasses, and ``Delta``.

Each item names its session and keeps the raw :class:`~dsh.events.Event` it came from
(``event``), so a front-end that shows the log itself (the viewer's events table, ``dsh
tail``) still has it; every other field is read once, by :mod:`dsh.session.timeline.fold`,
leniently (a foreign log may lack a field: a missing string is ``""``, a number ``None``).
Front-ends ``match`` on the class, never on the event's type string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dsh.events import Event
from dsh.events.chunks import Usage
from dsh.events.descriptor import kind_or_default
from dsh.events.history import HistoryMessage
from dsh.events.messages import Block
from dsh.events.todos import TodoItem


@dataclass(frozen=True, slots=True)
class TurnStart:
    """``turn/start``: a turn opened (``inherited``: before a fork child's cut)."""

    session: str
    event: Event
    turn: int
    inherited: bool


@dataclass(frozen=True, slots=True)
class Step:
    """``step/start``: a model call of turn ``turn`` begins (``step``: its number in the turn)."""

    session: str
    event: Event
    turn: int | None
    step: int | None
    inherited: bool


@dataclass(frozen=True, slots=True)
class Prompt:
    """A ``user/message`` a person typed: its text blocks joined, each non-empty text block,
    and its message id."""

    session: str
    event: Event
    text: str
    parts: tuple[str, ...]
    message_id: str | None
    inherited: bool


@dataclass(frozen=True, slots=True)
class Relayed:
    """A ``user/message`` that did not come from the user: ``source`` says who (a subagent's
    report or notice, a coordinator, a runtime-context plugin, …); ``parts``: its text blocks."""

    session: str
    event: Event
    source: str
    text: str
    parts: tuple[str, ...]
    inherited: bool


@dataclass(frozen=True, slots=True)
class Request:
    """``request/header``: the model and provider (``None``: not logged) and why it was logged."""

    session: str
    event: Event
    model: str | None
    provider: str | None
    reason: str | None
    inherited: bool


@dataclass(frozen=True, slots=True)
class Reasoning:
    """The reasoning of one ``assistant/message`` (its reasoning blocks joined)."""

    session: str
    event: Event
    text: str
    inherited: bool


@dataclass(frozen=True, slots=True)
class Part:
    """One non-empty text or reasoning block of an assistant message, in message order."""

    kind: Literal["text", "reasoning"]
    text: str


@dataclass(frozen=True, slots=True)
class CallPart:
    """A tool-call block of an assistant message (``arguments``: the model's raw value)."""

    call_id: str
    name: str
    arguments: Any


@dataclass(frozen=True, slots=True)
class Answer:
    """One ``assistant/message``: its text blocks joined (``text``), every non-empty text and
    reasoning block in order (``parts``), its tool-call blocks, usage and message id."""

    session: str
    event: Event
    text: str
    parts: tuple[Part, ...]
    calls: tuple[CallPart, ...]
    usage: Usage | None
    message_id: str | None
    turn: int | None
    step: int | None
    interrupted: bool
    """The call was cancelled and this is its partial message."""
    inherited: bool


@dataclass(frozen=True, slots=True)
class Attempt:
    """``assistant/attempt``: a model call that failed (its failure code and message)."""

    session: str
    event: Event
    code: str | None
    message: str | None
    usage: Usage | None
    step: int | None
    inherited: bool


@dataclass(frozen=True, slots=True)
class ToolCall:
    """``tool/call``: ``arguments`` is the raw JSON text, ``parsed`` its value (``{}`` for
    blank text, the text itself when it is not JSON); ``child``: the session it started, when
    the timeline knows it (a history fold given the tree; live, the child is not born yet)."""

    session: str
    event: Event
    call_id: str
    name: str
    arguments: str
    parsed: Any
    child: str | None
    inherited: bool

    @property
    def delegates(self) -> bool:
        """Whether this call starts a subagent (``subagent`` / ``subagent_fork``)."""
        return self.name in SUBAGENT_TOOLS


@dataclass(frozen=True, slots=True)
class ToolResult:
    """``tool/result``: what the model saw of the call ``call_id`` (its text blocks joined,
    its content blocks), paired with its ``ToolCall`` (``None``: the call is not in the log)."""

    session: str
    event: Event
    call_id: str
    text: str
    content: tuple[Block, ...]
    is_error: bool
    call: ToolCall | None
    child: str | None
    inherited: bool

    @property
    def name(self) -> str | None:
        """The paired call's tool name."""
        return self.call.name if self.call is not None else None


@dataclass(frozen=True, slots=True)
class ChildStarted:
    """A child's ``subagent/descriptor`` (``session`` is the child): its kind, label, cut,
    parent and the parent's call that started it."""

    session: str
    event: Event
    kind: str
    label: str | None
    cut: int
    parent: str | None
    call_id: str | None
    provider: str | None

    @property
    def provider_kind(self) -> str:
        """The descriptor's ``provider`` with the default applied (:func:`kind_or_default`)."""
        return kind_or_default(self.provider)


@dataclass(frozen=True, slots=True)
class ChildEnded:
    """A known child's turn ended (after its ``TurnEnd``): ``reason`` as the turn's."""

    session: str
    event: Event
    reason: str | None


@dataclass(frozen=True, slots=True)
class Hook:
    """``hook/result``: a hook's decision at ``point`` (the raw fields, as logged)."""

    session: str
    event: Event
    point: object
    handler: object
    decision: object
    exit_code: object
    duration_ms: object
    stderr_summary: object
    inherited: bool


@dataclass(frozen=True, slots=True)
class Approval:
    """``approval/asked`` (``outcome`` ``None``) or ``approval/decided`` (paired with its
    question: the tool name and call id come from it)."""

    session: str
    event: Event
    request_id: str
    tool_name: str | None
    call_id: str | None
    reason: str | None
    outcome: str | None
    inherited: bool


@dataclass(frozen=True, slots=True)
class Todos:
    """``todo/write``: the session's task list from here on."""

    session: str
    event: Event
    todos: tuple[TodoItem, ...]
    inherited: bool


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """``turn/end``: how the turn ended (``reason``: its kind; ``failure``: an error's code and
    message, as logged) and the usage of every settlement in it."""

    session: str
    event: Event
    turn: int | None
    reason: str | None
    failure: dict[str, Any] | None
    usage: dict[str, int]
    inherited: bool


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction, at its checkpoint ``user/message`` (``event``): the surface span it
    replaced — ``replaced`` nodes (``shadowed_seqs``, in surface order; ``originals``: their
    messages, typed), covering turns ``turns`` (first, last) — priced ``tokens_before`` (the
    summary's ``shadowedTokenCount``) and ``tokens_after`` (the checkpoint's price), and the
    ``summary`` text (never the checkpoint's framing). ``turn``: the turn that owned it
    (``None``: a manual compaction between turns).

    A failed attempt is one too, at its ``compaction/end``: ``error`` says why, nothing was
    replaced and the history is unchanged.
    """

    session: str
    event: Event
    compaction_id: str
    turn: int | None
    replaced: int
    turns: tuple[int, int] | None
    tokens_before: int | None
    tokens_after: int | None
    summary: str
    shadowed_seqs: tuple[int, ...]
    originals: tuple[HistoryMessage, ...]
    error: str | None
    inherited: bool

    @property
    def ok(self) -> bool:
        """Whether it replaced a span (``False``: a failed attempt)."""
        return self.error is None

    @property
    def headline(self) -> str:
        """The one line every front-end shows (untrusted: the error is the log's; escape it):
        ``compacted turns 1–12: 37 messages, 9,812 → 640 tokens``, or ``compaction failed:
        the history is unchanged (WHY)``."""
        if self.error is not None:
            return f"compaction failed: the history is unchanged ({self.error})"
        first, last = self.turns or (None, None)
        span = "" if first is None else f"turn {first} " if first == last else f"turns {first}–{last} "
        noun = "message" if self.replaced == 1 else "messages"
        before = "?" if self.tokens_before is None else f"{self.tokens_before:,}"
        after = "?" if self.tokens_after is None else f"{self.tokens_after:,}"
        return f"compacted {span}".rstrip() + f": {self.replaced} {noun}, {before} → {after} tokens"

    def record(self) -> dict[str, Any]:
        """The compaction's JSON record (``dsh log --json``, ``dsh run --json``;
        docs/reference/json-output.md): every key always present."""
        return {
            "type": "compaction",
            "sessionId": self.session,
            "seq": self.event.seq,
            "compactionId": self.compaction_id,
            "turn": self.turn,
            "replacedMessages": self.replaced,
            "turns": {"first": self.turns[0], "last": self.turns[1]} if self.turns else None,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "summary": self.summary,
            "shadowedSeqs": list(self.shadowed_seqs),
            "error": self.error,
            "headline": self.headline,
        }


@dataclass(frozen=True, slots=True)
class Cut:
    """``session/end-seed``: a fork child's inherited prefix ends here."""

    session: str
    event: Event


@dataclass(frozen=True, slots=True)
class Title:
    """``session/title``: the session's title from here on."""

    session: str
    event: Event
    title: str
    inherited: bool


Item = (
    TurnStart
    | Step
    | Prompt
    | Relayed
    | Request
    | Reasoning
    | Answer
    | Attempt
    | ToolCall
    | ToolResult
    | ChildStarted
    | ChildEnded
    | Hook
    | Approval
    | Todos
    | TurnEnd
    | Compaction
    | Cut
    | Title
)
"""One thing a front-end shows; other events (policies, inbox splices, step ends) make none."""


@dataclass(frozen=True, slots=True)
class Delta:
    """A streamed text or reasoning delta of a model call still in flight."""

    session: str
    kind: Literal["text", "reasoning"]
    text: str


SUBAGENT_TOOLS = frozenset({"subagent", "subagent_fork"})
"""The tools whose calls start a child session."""

RELAYED_SOURCES = frozenset({"subagent-settled", "subagent-report", "coordinator"})
"""``user/message`` sources of messages one session sent another (the scenario transcript's)."""

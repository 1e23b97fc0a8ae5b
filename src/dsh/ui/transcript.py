"""The viewer's transcript: timeline items rendered as template entries, one event at a time.

The session page and its live feed share one :class:`TranscriptBuilder`; each event costs
one fold step (:class:`~dsh.session.timeline.Timeline`), never a re-derive of the session.
Nothing here renders HTML: templates escape every string they are given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from dsh import jsonx
from dsh.events import Event
from dsh.events.header import SessionHeader
from dsh.events.history import HistoryMessage
from dsh.session import timeline as tl
from dsh.session.timeline import SUBAGENT_TOOLS, SessionState, Status, Timeline


@dataclass(frozen=True, slots=True)
class Item:
    """One transcript entry; ``kind`` picks the template block, ``fields`` fill it."""

    kind: str
    seq: int
    turn: int | None
    inherited: bool
    fields: dict[str, Any]


def _pretty(raw: object) -> str:
    if isinstance(raw, str):
        text = raw
        try:
            raw = jsonx.loads(text) if text.strip() else {}
        except jsonx.JSONDecodeError:
            return text
    try:
        return jsonx.dumps_pretty(raw)
    except TypeError:
        return repr(raw)


def _original(message: HistoryMessage) -> dict[str, Any]:
    """A message a compaction replaced, for the template: who, its text, calls and results."""
    return {
        "seq": message.seq,
        "role": message.role,
        "text": message.text,
        "calls": [(c.name, _pretty(c.arguments)) for c in message.tool_calls],
        "results": [(r.text, r.is_error) for r in message.tool_results],
    }


def pretty_json(value: object) -> str:
    """``value`` as indented JSON text (strings that hold JSON are parsed first)."""
    return _pretty(value)


class TranscriptBuilder:
    """Turns one session's events into transcript entries (``children``: ``(parent, call id)
    → child``, e.g. :attr:`~dsh.session.timeline.SessionTree.by_call`)."""

    def __init__(
        self,
        session_id: str,
        cut: int,
        children: Mapping[tuple[str, str], str],
        header: SessionHeader | None = None,
    ) -> None:
        self.session_id = session_id
        self.timeline = Timeline(children)
        self.timeline.begin(session_id, cut=cut, header=header)
        self.turn: int | None = None

    @property
    def state(self) -> SessionState:
        return self.timeline.state(self.session_id)

    def status(self) -> Status:
        return self.state.status()

    def items(self, event: Event) -> list[tl.Item]:
        """The timeline items of the session's next event."""
        return self.timeline.feed(self.session_id, event)

    def feed(self, event: Event) -> list[Item]:
        return [entry for item in self.items(event) for entry in self.render(item)]

    def render(self, item: tl.Item) -> list[Item]:
        """The entries of one timeline item (``[]`` for those the transcript does not show)."""
        event = item.event

        def entry(kind: str, inherited: bool, **fields: Any) -> Item:
            return Item(kind, event.seq, self.turn, inherited, fields)

        match item:
            case tl.TurnStart():
                self.turn = item.turn
                return [entry("turn-start", item.inherited)]
            case tl.Prompt():
                return [entry("prompt", item.inherited, text=item.text, source="user")]
            case tl.Relayed():
                return [entry("prompt", item.inherited, text=item.text, source=item.source or "user")]
            case tl.Request():
                return [entry("request", item.inherited, model=item.model, reason=item.reason)]
            case tl.Answer():
                out = [
                    entry("reasoning" if p.kind == "reasoning" else "answer", item.inherited, text=p.text)
                    for p in item.parts
                ]
                if item.usage is not None:
                    out.append(entry("usage", item.inherited, usage=item.usage, step=item.step))
                return out
            case tl.Attempt():
                fields = {"code": item.code, "message": item.message, "step": item.step}
                return [entry("attempt", item.inherited, **fields)]
            case tl.ToolCall():
                return [
                    entry(
                        "tool-call", item.inherited, name=item.name, call_id=item.call_id,
                        arguments=_pretty(item.arguments), child=item.child if item.delegates else None,
                        subagent=item.name in SUBAGENT_TOOLS,
                    )
                ]  # fmt: skip
            case tl.ToolResult():
                return [
                    entry(
                        "tool-result", item.inherited, call_id=item.call_id, name=item.name,
                        text=item.text, is_error=item.is_error, child=item.child,
                    )
                ]  # fmt: skip
            case tl.Hook():
                return [
                    entry(
                        "hook", item.inherited, point=item.point, handler=item.handler,
                        decision=item.decision, exit_code=item.exit_code, duration=item.duration_ms,
                    )
                ]  # fmt: skip
            case tl.TurnEnd():
                end = entry("turn-end", item.inherited, reason=item.reason)
                self.turn = None
                return [end]
            case tl.Cut():
                return [entry("cut", event.seq < self.state.cut, seq_cut=event.seq)]
            case tl.Title():
                return [entry("title", item.inherited, title=item.title)]
            case tl.Step() | tl.Reasoning() | tl.ChildStarted() | tl.ChildEnded():
                return []
            case tl.Compaction():
                return [
                    entry(
                        "compaction", item.inherited, headline=item.headline, ok=item.ok,
                        is_error=not item.ok, summary=item.summary, compaction_id=item.compaction_id,
                        originals=[_original(m) for m in item.originals],
                    )
                ]  # fmt: skip
            case tl.Approval() | tl.Todos():
                return []
            case _:
                assert_never(item)


def transcript(
    session_id: str, events: Sequence[Event], cut: int, by_call: Mapping[tuple[str, str], str]
) -> list[Item]:
    """Every transcript entry of a session's events."""
    builder = TranscriptBuilder(session_id, cut, by_call)
    return [item for event in events for item in builder.feed(event)]

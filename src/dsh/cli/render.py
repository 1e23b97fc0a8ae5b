"""The live view of ``dsh run``: streamed text, tool calls, delegations, usage.

What the model and the tools produce is untrusted: every label, name, id and message goes
through :func:`~dsh.cli.tables.terminal_safe` (streamed text keeps its newlines and tabs).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from dsh.cli.tables import terminal_safe
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.descriptor import parse_descriptor
from dsh.events.messages import joined_text
from dsh.events.payloads import tool_call_of, tool_result_of, turn_end_kind
from dsh.events.todos import todo_lines, todos_of
from dsh.events.vocabulary import (
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    HOOK_RESULT,
    SUBAGENT_DESCRIPTOR,
    TURN_END,
)


def _short(text: str, limit: int = 120) -> str:
    line = terminal_safe(" ".join(text.split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _safe(value: object) -> str:
    """A one-line field for markup: controls escaped, then Rich markup escaped."""
    return escape(terminal_safe(str(value)))


@dataclass(slots=True)
class _Child:
    label: str
    depth: int


class LiveView:
    """Feed listener that renders one top-level session and its subagents.

    The top-level session streams reasoning (dimmed) and text as they arrive; subagents
    are shown as labelled, indented summaries so concurrent children stay readable.
    ``stream_text=False`` leaves the top-level session's text out (``dsh run`` piped: the
    answer goes to stdout alone at the end, the rest of this view to stderr).
    """

    def __init__(
        self, console: Console, root_session: str | None = None, *, stream_text: bool = True
    ) -> None:
        self.console = console
        self.stream_text = stream_text
        self.root = root_session
        """The top-level session; ``None`` adopts the first session that is not a child."""
        self._children: dict[str, _Child] = {}
        self._mid_line = False
        self._mode = ""

    def _newline(self) -> None:
        if self._mid_line:
            self.console.print()
            self._mid_line = False
            self._mode = ""

    def _prefix(self, session_id: str) -> str:
        child = self._children.get(session_id)
        if child is None:
            return ""
        return "  " * child.depth + f"[cyan]\\[{_safe(child.label)}][/cyan] "

    def chunk(self, session_id: str, chunk: Chunk) -> None:
        if self.root is None and session_id not in self._children:
            self.root = session_id
        if session_id != self.root:
            return
        if chunk["type"] == "reasoning-delta":
            if self._mode != "reasoning":
                self._newline()
                self._mode = "reasoning"
            text = terminal_safe(chunk["text"], multiline=True)
            self.console.print(text, style="dim", end="", markup=False, highlight=False)
            self._mid_line = True
        elif chunk["type"] == "text-delta" and self.stream_text:
            if self._mode != "text":
                self._newline()
                self._mode = "text"
            self.console.print(
                terminal_safe(chunk["text"], multiline=True), end="", markup=False, highlight=False
            )
            self._mid_line = True

    def event(self, session_id: str, event: Event) -> None:
        etype = event.type
        if self.root is None and etype != SUBAGENT_DESCRIPTOR:
            self.root = session_id
        data = event.data
        descriptor = parse_descriptor(event)
        if descriptor is not None:
            parent_child = self._children.get(descriptor.parent_session or "")
            depth = parent_child.depth + 1 if parent_child else 1
            label = descriptor.label or session_id[:8]
            self._children[session_id] = _Child(label, depth)
            self._newline()
            self.console.print(
                "  " * (depth - 1)
                + f"[magenta]⇢ {_safe(descriptor.provider)}[/magenta] "
                + f"[cyan]\\[{_safe(label)}][/cyan] session {_safe(session_id)}"
            )
        elif (call := tool_call_of(event)) is not None:
            self._newline()
            self.console.print(
                self._prefix(session_id)
                + f"[yellow]→ {_safe(call['name'])}[/yellow] "
                + escape(_short(call["arguments"], 100))
            )
        elif (block := tool_result_of(event)) is not None:
            text = joined_text(block["content"])
            mark = "[red]✗[/red]" if block["isError"] else "[green]←[/green]"
            self._newline()
            self.console.print(self._prefix(session_id) + f"{mark} " + escape(_short(text)))
        elif (todos := todos_of(event)) is not None:
            self._newline()
            self.console.print(self._prefix(session_id) + f"[blue]☰ todo list ({len(todos)})[/blue]")
            for line in todo_lines(todos):
                self.console.print(self._prefix(session_id) + "  " + escape(_short(line)))
        elif etype == HOOK_RESULT:
            detail = f", exit {data['exitCode']}" if "exitCode" in data else ""
            why = f" — {_short(str(data['stderrSummary']))}" if data.get("stderrSummary") else ""
            style = "red" if data.get("decision") in ("block", "deny") else "dim"
            self._newline()
            self.console.print(
                self._prefix(session_id)
                + f"[{style}]⚑ hook {_safe(data.get('point'))} ({_safe(data.get('handlerId'))}): "
                + f"{_safe(data.get('decision'))}{detail}[/{style}]"
                + escape(terminal_safe(why))
            )
        elif etype == ASSISTANT_ATTEMPT:
            failure = data.get("failure", {})
            self._newline()
            self.console.print(
                self._prefix(session_id)
                + f"[red]! model call failed: {_safe(failure.get('code'))}[/red] "
                + escape(_short(str(failure.get("message", ""))))
            )
        elif etype == ASSISTANT_MESSAGE and session_id != self.root:
            text = joined_text(data.get("message", {}).get("content", []))
            if text.strip():
                self._newline()
                self.console.print(self._prefix(session_id) + escape(_short(text, 400)))
        elif etype == TURN_END and session_id in self._children:
            self._newline()
            kind = turn_end_kind(event)
            self.console.print(self._prefix(session_id) + f"[magenta]⇠ {_safe(kind)}[/magenta]")

    def footer(self, session_id: str, kind: object, used: str) -> str:
        """The markup of a turn's last line: ``■ KIND · USAGE · session ID`` (all escaped)."""
        style = "green" if kind in ("completed", "max-tokens", "blocked") else "red"
        return f"[{style}]■ {_safe(kind)}[/{style}] · {_safe(used)} · session {_safe(session_id)}"

    def end_line(self) -> None:
        """End a line the streamed text left open (before a footer printed elsewhere)."""
        self._newline()

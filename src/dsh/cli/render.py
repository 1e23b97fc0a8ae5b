"""The live view of ``dsh run``: streamed text, tool calls, delegations, usage.

What the model and the tools produce is untrusted: every label, name, id and message goes
through :func:`~dsh.cli.tables.terminal_safe` (streamed text keeps its newlines and tabs).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from dsh.cli.tables import cell_width, readable_result, terminal_safe
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.todos import todo_lines
from dsh.session import timeline as tl
from dsh.session.timeline import Timeline

_PROMPT_MARK = "› "
_PROMPT_CELLS = cell_width(_PROMPT_MARK)


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
    answer goes to stdout alone at the end, the rest of this view to stderr). ``prompts``
    shows each prompt (``› PROMPT``) before its turn, and sets turns apart by a blank line (a
    woken turn too, which has no prompt) — of the top-level session and of sessions code
    started (a delegation's prompt is its tool call's): a replay's prompts come from the
    recording, not from the person watching.
    """

    def __init__(
        self,
        console: Console,
        root_session: str | None = None,
        *,
        stream_text: bool = True,
        timeline: Timeline | None = None,
        prompts: bool = False,
        batch: bool = False,
    ) -> None:
        self.console = console
        self.batch = batch
        """A replay's view (its chunks are served at once): consecutive deltas of one kind are
        printed together while Rich prints the joined text as it prints the pieces — one line
        within the width, no tab — and flushed at every other chunk and before anything else."""
        self._pending: list[str] = []
        self._pending_cells = 0
        self._pending_style: str | None = None
        self._width = 0
        self.stream_text = stream_text
        self.prompts = prompts
        self._shown_since_break = False
        """Whether a line was printed since the last turn break (a prompt line does not count)."""
        self.root = root_session
        """The top-level session; ``None`` adopts the first session that is not a child."""
        self.timeline = timeline if timeline is not None else Timeline()
        """The fold this view renders (shared with the caller's own listeners when given)."""
        self._children: dict[str, _Child] = {}
        self._mid_line = False
        self._mode = ""
        plain = not console.is_terminal and console.color_system is None and console.soft_wrap
        self._plain = console.file if plain and not console.record else None
        """Where plain text goes straight (:meth:`_plain_print`): a piped console that neither
        colours, wraps nor records."""

    def _plain_print(self, text: str, style: str | None = None, end: str = "", cells: int = -1) -> None:
        """Print ``text`` (already :func:`terminal_safe`: no control code Rich strips) and ``end``
        (``cells``: the cells ``text`` takes, when the caller knows them).

        On a plain console (:attr:`_plain`), a line within the width and without a tab (which
        Rich expands) is written to its file: what Rich prints for it, without Rich's ~30 us a
        print (a 5,000-call replay's view printed 25,000 of them). Anything else goes to Rich
        (the same file object: the order is kept)."""
        if (
            self._plain is not None
            and "\t" not in text
            and "\n" not in text
            and (cells if cells >= 0 else cell_width(text)) < self.console.width
        ):
            self._plain.write(text + end)
            if end:  # a whole line: someone watching (``| tee``) sees it now, as with Rich
                self._plain.flush()
        else:
            self.console.print(text, style=style, end=end, markup=False, highlight=False)

    def flush(self) -> None:
        """Print the pending deltas (:attr:`batch`), if any."""
        if self._pending:
            text, cells = "".join(self._pending), self._pending_cells
            self._pending.clear()
            self._pending_cells = 0
            self._plain_print(text, self._pending_style, cells=cells)

    def _held(self, text: str, style: str | None, cells: int) -> bool:
        """Whether ``text`` joins the pending deltas (:attr:`batch`), flushing them when it cannot
        (``cells``: the cells it takes, ``-1`` when it holds a newline or a tab)."""
        if not self.batch:
            return False
        if self._pending and (cells < 0 or self._pending_cells + cells >= self._width):
            self.flush()
        if not self._pending:
            self._width = self.console.width  # read once per printed line, not per delta
        if cells < 0 or self._pending_cells + cells >= self._width:
            return False
        self._pending.append(text)
        self._pending_cells += cells
        self._pending_style = style
        return True

    def _newline(self) -> None:
        self.flush()
        if self._mid_line:
            self._plain_print("", end="\n")
            self._mid_line = False
            self._mode = ""

    def _prefix(self, session_id: str) -> str:
        child = self._children.get(session_id)
        if child is None:
            return ""
        return "  " * child.depth + f"[cyan]\\[{_safe(child.label)}][/cyan] "

    def chunk(self, session_id: str, chunk: Chunk) -> None:
        delta = self.timeline.chunk(session_id, chunk)
        if delta is not None:
            self.delta(delta)
        else:
            self.flush()

    def delta(self, delta: tl.Delta) -> None:
        """Stream one delta of the top-level session (a child's are not shown)."""
        if self.root is None and delta.session not in self._children:
            self.root = delta.session
        if delta.session != self.root or (delta.kind == "text" and not self.stream_text):
            return
        if self._mode != delta.kind:
            self._newline()
            self._mode = delta.kind
        text = delta.text
        if text.isascii() and text.isprintable():  # nearly every delta: nothing to escape or measure
            cells = len(text)
        else:
            text = terminal_safe(text, multiline=True)
            cells = cell_width(text) if "\n" not in text and "\t" not in text else -1
        style = "dim" if delta.kind == "reasoning" else None
        if not self._held(text, style, cells):
            self._plain_print(text, style, cells=cells)
        self._mid_line = True
        self._shown_since_break = True

    def event(self, session_id: str, event: Event) -> None:
        self.flush()
        self.show(session_id, self.timeline.feed(session_id, event))

    def show(self, session_id: str, items: list[tl.Item]) -> None:
        """Render the items one event of ``session_id`` made."""
        if self.root is None and not any(isinstance(i, tl.ChildStarted) for i in items):
            self.root = session_id
        for item in items:
            self._show(session_id, item)

    def _line(self, session_id: str, markup: str) -> None:
        self._newline()
        self.console.print(self._prefix(session_id) + markup)
        self._shown_since_break = True

    def _turn_break(self) -> None:
        """End the open line and, when anything was shown since the last break, leave a blank line."""
        self._newline()
        if self._shown_since_break:
            self._plain_print("", end="\n")
            self._shown_since_break = False

    def _own_turns(self, session_id: str, item: tl.TurnStart | tl.Prompt | tl.Step) -> bool:
        """Whether ``item`` opens a turn the replay view sets apart: ``prompts`` on, of the
        top-level session or one code started (a delegated child's turns are its tool call's)."""
        return self.prompts and session_id not in self._children and not item.inherited

    def _show(self, session_id: str, item: tl.Item) -> None:
        match item:
            case tl.ChildStarted():
                parent_child = self._children.get(item.parent or "")
                depth = parent_child.depth + 1 if parent_child else 1
                label = item.label or session_id[:8]
                self._children[session_id] = _Child(label, depth)
                self._newline()
                self.console.print(
                    "  " * (depth - 1)
                    + f"[magenta]⇢ {_safe(item.provider)}[/magenta] "
                    + f"[cyan]\\[{_safe(label)}][/cyan] session {_safe(session_id)}"
                )
                self._shown_since_break = True
            case tl.TurnStart() if self._own_turns(session_id, item):
                self._turn_break()
            case tl.Step() if self._own_turns(session_id, item):
                self._newline()  # a step's answer starts its own line ("STARTED", then "NOTED")
            case tl.Prompt() if self._own_turns(session_id, item):
                self._turn_break()  # the original logs a prompt before its turn/start
                text = terminal_safe(item.text.strip("\n"), multiline=True)
                cells = _PROMPT_CELLS + cell_width(text)
                self._plain_print(_PROMPT_MARK + text, "bold", end="\n", cells=cells)
            case tl.ToolCall():
                self._line(
                    session_id,
                    f"[yellow]→ {_safe(item.name)}[/yellow] " + escape(_short(item.arguments, 100)),
                )
            case tl.ToolResult():
                mark = "[red]✗[/red]" if item.is_error else "[green]←[/green]"
                self._line(session_id, f"{mark} " + escape(_short(readable_result(item.text))))
            case tl.Todos():
                self._line(session_id, f"[blue]☰ todo list ({len(item.todos)})[/blue]")
                for line in todo_lines(item.todos):
                    self.console.print(self._prefix(session_id) + "  " + escape(_short(line)))
            case tl.Hook():
                detail = f", exit {item.exit_code}" if item.exit_code is not None else ""
                why = f" — {_short(str(item.stderr_summary))}" if item.stderr_summary else ""
                style = "red" if item.decision in ("block", "deny") else "dim"
                self._line(
                    session_id,
                    f"[{style}]⚑ hook {_safe(item.point)} ({_safe(item.handler)}): "
                    + f"{_safe(item.decision)}{detail}[/{style}]"
                    + escape(terminal_safe(why)),
                )
            case tl.Attempt():
                self._line(
                    session_id,
                    f"[red]! model call failed: {_safe(item.code)}[/red] "
                    + escape(_short(str(item.message or ""))),
                )
            case tl.Answer() if session_id != self.root and item.text.strip():
                self._line(session_id, escape(_short(item.text, 400)))
            case tl.ChildEnded():
                self._line(session_id, f"[magenta]⇠ {_safe(item.reason)}[/magenta]")
            case tl.Compaction():
                style = "dim" if item.ok else "red"
                self._line(session_id, f"[{style}]⟲ {_safe(item.headline)}[/{style}]")
            case _:
                pass

    def footer(self, session_id: str, kind: object, used: str) -> str:
        """The markup of a turn's last line: ``■ KIND · USAGE · session ID`` (all escaped)."""
        style = "green" if kind in ("completed", "max-tokens", "blocked") else "red"
        return f"[{style}]■ {_safe(kind)}[/{style}] · {_safe(used)} · session {_safe(session_id)}"

    def end_line(self) -> None:
        """End a line the streamed text left open (before a footer printed elsewhere)."""
        self._newline()

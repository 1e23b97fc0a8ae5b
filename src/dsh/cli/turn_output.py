"""What ``dsh run`` and ``dsh chat`` print for a turn: the answer on stdout, the rest on stderr.

- A terminal on stdout: the live view (reasoning dimmed, text streamed, tool calls and
  subagents) on stdout, the footer on stderr.
- stdout piped or redirected: only the turn's final answer is written to stdout, once, as
  is (no wrapping, a trailing newline); the live view without the text, and the footer, go
  to stderr.
- ``--json``: one JSON object per line on stdout — every log event
  (``{"sessionId", "type", "seq", "time", "data", ...}``), every streamed delta
  (``{"type": "delta", "sessionId", "kind": "text" | "reasoning", "text"}``), and last
  ``{"type": "result", "sessionId", "turn", "reason", "text", "usage", "ownUsage",
  "children": [{"sessionId", "usage"}]}``.

Usage totals count every descendant: the children's settlements arrive on the same feed.
"""

from __future__ import annotations

import sys

from rich.markup import escape

from dsh.cli.common import write_json_line
from dsh.cli.render import LiveView
from dsh.cli.tables import make_console, terminal_safe, usage_text
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.loop import Feed, TurnResult
from dsh.session.timeline import Answer, Attempt, Timeline
from dsh.session.timeline.state import add_usage


def _add(into: dict[str, int], usage: dict[str, int]) -> None:
    for key, value in usage.items():
        into[key] = into.get(key, 0) + value


class TurnOutput:
    """Listens to a turn's feed and prints it by the rules of the module docstring."""

    def __init__(self, feed: Feed, root: str, *, as_json: bool) -> None:
        self.root = root
        self.as_json = as_json
        self.piped = not sys.stdout.isatty()
        self.err = make_console(stderr=True, markup=True, live=True)  # never wrapped in a pipe or a log file
        self.children: dict[str, dict[str, int]] = {}
        self.view: LiveView | None = None
        self.timeline = Timeline()
        feed.on_event(self._event)
        feed.on_chunk(self._chunk)
        if not as_json:
            console = self.err if self.piped else make_console(markup=True, live=True)
            self.view = LiveView(console, root, stream_text=not self.piped, timeline=self.timeline)

    def _event(self, session_id: str, event: Event) -> None:
        items = self.timeline.feed(session_id, event)
        if session_id != self.root:
            for item in items:
                if isinstance(item, Answer | Attempt):
                    add_usage(self.children.setdefault(session_id, {}), item.usage)
        if self.as_json:
            write_json_line({"sessionId": session_id, **event.to_wire()})
        elif self.view is not None:
            self.view.show(session_id, items)

    def _chunk(self, session_id: str, chunk: Chunk) -> None:
        delta = self.timeline.chunk(session_id, chunk)
        if delta is None:
            return
        if self.as_json:
            write_json_line(
                {"type": "delta", "sessionId": session_id, "kind": delta.kind, "text": delta.text}
            )
        elif self.view is not None:
            self.view.delta(delta)

    def start_turn(self) -> None:
        """Forget the previous turn's children (``dsh chat`` runs many turns on one feed)."""
        self.children = {}

    def total(self, own: dict[str, int]) -> dict[str, int]:
        """``own`` plus every child's usage seen on the feed."""
        out = dict(own)
        for usage in self.children.values():
            _add(out, usage)
        return out

    def finish(self, result: TurnResult) -> None:
        """The answer (piped), the footer (stderr) or the JSON result line."""
        total = self.total(result.usage)
        if self.as_json:
            children = [{"sessionId": sid, "usage": usage} for sid, usage in self.children.items()]
            write_json_line(
                {
                    "type": "result",
                    "sessionId": result.session_id,
                    "turn": result.turn,
                    "reason": result.reason,
                    "text": result.text,
                    "usage": total,
                    "ownUsage": result.usage,
                    "children": children,
                }
            )
            return
        if not result.ok:  # the one-line error dsh prints next says it all
            if self.view is not None:
                self.view.end_line()
            return
        if self.piped and result.text:
            sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
            sys.stdout.flush()
        used = usage_text(total)
        if self.children:
            used += f" (with {len(self.children)} subagent(s))"
        if self.view is not None:
            self.view.end_line()
            self.err.print(self.view.footer(self.root, result.reason.get("kind"), used))

    def cancelled(self) -> None:
        """A Ctrl-C ended the turn: say so on stderr."""
        if self.view is not None:
            self.view.end_line()
        self.err.print(f"[red]■ cancelled[/red] · session {escape(terminal_safe(self.root))}")

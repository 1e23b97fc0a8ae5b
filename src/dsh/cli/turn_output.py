"""What ``dsh run`` and ``dsh chat`` print for a turn: the answer on stdout, the rest on stderr.

- A terminal on stdout: the live view (reasoning dimmed, text streamed, tool calls and
  subagents) on stdout, the footer on stderr.
- stdout piped or redirected: only the turn's final answer is written to stdout, once, as
  is (no wrapping, a trailing newline); the live view without the text, and the footer, go
  to stderr.
- ``--json``: one JSON object per line on stdout — every log event
  (``{"sessionId", "type", "seq", "time", "data", ...}``), every streamed delta
  (``{"type": "delta", "sessionId", "kind": "text" | "reasoning", "text"}``; with
  ``--temporal``, ``{"type": "delta-restart", "sessionId"}`` when a lost worker's step is
  asked again: the deltas since the last event line are void), a
  compaction's record right after its checkpoint's (or failed ``compaction/end``'s) event
  line (``{"type": "compaction", ...}``: :meth:`dsh.session.timeline.Compaction.record`), and last
  ``{"type": "result", "sessionId", "turn", "reason", "text", "usage", "ownUsage",
  "children": [{"sessionId", "usage"}], "calls", "tokens", "cost"}``.

Woken turns (``dsh run``: a background child's settlement wakes the idle parent, which
answers again): each ends its streamed text with a newline and gets its own footer when it
ends; at exit (:meth:`TurnOutput.close`) piped stdout gets the session's *final* answer (the
last turn's), and ``--json`` one ``result`` line per turn in order, the last holding the final
answer. ``ownUsage`` is the turn's own; ``usage`` the run's total up to that turn: every
earlier turn's own usage and every descendant's (the children's settlements arrive on the
same feed), so the last line's is the whole run's. ``calls``, ``tokens`` (the five counts of
:class:`dsh.session.usage.Tokens`) and ``cost`` (:meth:`dsh.session.prices.Cost.to_wire`: an
unknown price is ``null`` with the model named) cover the same calls — every model call the
feed settled up to that turn's end, failed attempts and children included, each once.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from rich.markup import escape

from dsh.cli.common import write_json_line
from dsh.cli.render import LiveView
from dsh.cli.tables import make_console, terminal_safe, usage_text
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.loop import Feed, TurnResult
from dsh.session.prices import PriceTable
from dsh.session.timeline import Answer, Attempt, Compaction, Timeline, TurnEnd
from dsh.session.usage import Ledger, add_usage


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
        self.prices = PriceTable.load()
        self.spent: dict[int, Ledger] = {}
        """The run's calls up to each root turn's end."""
        self._ended: int | None = None
        feed.on_event(self._event)
        feed.on_chunk(self._chunk)
        if not as_json:
            console = self.err if self.piped else make_console(markup=True, live=True)
            self.view = LiveView(console, root, stream_text=not self.piped, timeline=self.timeline)

    def _event(self, session_id: str, event: Event) -> None:
        items = self.timeline.feed(session_id, event)
        if session_id == self.root:
            for item in items:
                if isinstance(item, TurnEnd) and item.turn is not None:
                    self.spent[item.turn] = self.run_ledger()
        if session_id != self.root:
            for item in items:
                if isinstance(item, Answer | Attempt):
                    add_usage(self.children.setdefault(session_id, {}), item.usage)
        if self.as_json:
            write_json_line({"sessionId": session_id, **event.to_wire()})
            for item in items:
                if isinstance(item, Compaction):
                    write_json_line(item.record())
        elif self.view is not None:
            self.view.show(session_id, items)
        if session_id == self.root and self._ended is not None:
            for item in items:
                if isinstance(item, TurnEnd) and item.turn is not None and item.turn > self._ended:
                    self._woken_ended(item)

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

    def restarted(self) -> None:
        """The deltas streamed since the last event are void: the model call is asked again
        (``dsh run --temporal``: its worker was lost mid-stream). The view ends the line, so
        the new attempt's text starts on its own; ``--json`` writes ``{"type":
        "delta-restart", "sessionId"}``."""
        if self.as_json:
            write_json_line({"type": "delta-restart", "sessionId": self.root})
        elif self.view is not None:
            self.view.end_line()

    def start_turn(self) -> None:
        """Forget the previous turn's children (``dsh chat`` runs many turns on one feed)."""
        self.children = {}
        self._ended = None

    def run_ledger(self) -> Ledger:
        """Every model call the feed settled so far, of every session (the feed carries no
        fork child's inherited events: each call is counted once)."""
        return self.timeline.spent()

    def total(self, own: dict[str, int]) -> dict[str, int]:
        """``own`` plus every child's usage seen on the feed."""
        out = dict(own)
        for usage in self.children.values():
            add_usage(out, usage)
        return out

    def finish(self, result: TurnResult) -> None:
        """One turn, whole: :meth:`ended` then :meth:`close` (``dsh chat``, a turn at a time)."""
        self.ended(result)
        self.close([result])

    def ended(self, result: TurnResult) -> None:
        """The submitted turn ended: its footer (stderr); turns ending after it are woken ones."""
        self._ended = result.turn
        if self.as_json:
            return
        if self.view is not None:
            self.view.end_line()
        if result.ok and self.view is not None:  # else the one-line error dsh prints next says it all
            used = usage_text(self.total(result.usage))
            if self.children:
                used += f" (with {len(self.children)} subagent(s))"
            self.err.print(self.view.footer(self.root, result.reason.get("kind"), used))

    def close(self, results: Sequence[TurnResult]) -> None:
        """At exit, ``results`` the turns since the submitted one, in order: the final answer
        (piped stdout) or a JSON result line each."""
        if self.as_json:
            for at, result in enumerate(results):
                self._result_line(result, [r.usage for r in results[:at]])
            return
        final = results[-1] if results else None
        if self.piped and final is not None and final.ok and final.text:
            sys.stdout.write(final.text if final.text.endswith("\n") else final.text + "\n")
            sys.stdout.flush()

    def _result_line(self, result: TurnResult, earlier: list[dict[str, int]]) -> None:
        total = self.total(result.usage)
        for usage in earlier:
            add_usage(total, usage)
        children = [{"sessionId": sid, "usage": usage} for sid, usage in self.children.items()]
        spent = self.spent.get(result.turn) or self.run_ledger()
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
                "calls": len(spent.calls),
                "tokens": spent.tokens.to_wire(),
                "cost": self.prices.cost(spent).to_wire(),
            }
        )

    def _woken_ended(self, item: TurnEnd) -> None:
        """A woken turn of the root ended: close its streamed line and give it its footer."""
        if self.view is None:
            return
        self.view.end_line()
        self.err.print(self.view.footer(self.root, item.reason, usage_text(item.usage)))

    def cancelled(self) -> None:
        """A Ctrl-C ended the turn: say so on stderr."""
        if self.view is not None:
            self.view.end_line()
        self.err.print(f"[red]■ cancelled[/red] · session {escape(terminal_safe(self.root))}")

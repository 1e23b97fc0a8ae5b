"""A session as a person reads it, written as Markdown: the one renderer of ``dsh log``.

Built from :func:`dsh.snapshot.transcript.build_transcript` (``detail=True``): prompts,
answers, reasoning (only with ``reasoning``), tool calls and results abbreviated to one
line, each compaction as a ``── compacted turns A–B: N messages, X → Y tokens ──`` block
with its summary quoted (the replaced messages stay where they happened; ``originals``
lists them, in full, in the block too; a failed one is its one line), and each subagent
call either linked (``dsh log CHILD``) or, with ``children``, its
child's transcript nested as a block quote. A terminal shows the Markdown rendered; a pipe,
``sessions export --format markdown`` and the golden tests get the text itself.
Everything recorded is untrusted: control characters are escaped (:func:`terminal_safe`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dsh import jsonx
from dsh.cli.tables import format_time, readable_result, terminal_safe, usage_text
from dsh.events.fork import branch_turn
from dsh.events.todos import todo_lines
from dsh.session.digest import derive
from dsh.session.prices import PriceTable
from dsh.session.spend import TreeSpend, spent_text, tree_spend
from dsh.snapshot.transcript import Line, walk_transcript
from dsh.store.base import LoadedSession

ABBREVIATE = 100
"""Tool arguments and results are cut to this many characters."""


@dataclass(frozen=True, slots=True)
class ViewOptions:
    """What the transcript shows besides prompts and answers."""

    reasoning: bool = False
    children: bool = False
    originals: bool = False
    """List the messages each compaction replaced, in full, in its block."""


def _one_line(text: str, limit: int = ABBREVIATE) -> str:
    line = terminal_safe(" ".join(text.split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _block(text: str) -> str:
    return terminal_safe(text.strip("\n"), multiline=True)


def _quoted(text: str) -> list[str]:
    return [f"> {line}".rstrip() for line in text.splitlines()]


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, str):
        return _one_line(arguments)
    return _one_line(jsonx.dumps(arguments).decode())


def _result(line: Line) -> str:
    text = readable_result(str(line.get("text", "")))
    lines = text.strip().splitlines()
    more = f" ({len(lines)} lines)" if len(lines) > 1 else ""
    mark = "✗" if line.get("isError") else "←"
    return f"- {mark} {_one_line(lines[0]) if lines else '(empty)'}{more}"


def _original(message: Line) -> list[str]:
    """One replaced message, in full: ``**#SEQ · ROLE**``, its text, its calls and results."""
    out = [f"**#{message['seq']} · {terminal_safe(str(message['role']))}**", ""]
    text = _block(str(message.get("text", "")))
    out += [text, ""] if text else []
    calls = [
        f"- → **{terminal_safe(str(c['name']))}** {_arguments(c['arguments'])}" for c in message["toolCalls"]
    ]
    results = [f"- {'✗' if r['isError'] else '←'} {_block(str(r['text']))}" for r in message["toolResults"]]
    return out + ([*calls, *results, ""] if calls or results else [])


class _Writer:
    """Walks the transcript lines of one session, descending into children where they start."""

    def __init__(self, lines: list[Line], options: ViewOptions) -> None:
        self.lines = lines
        self.options = options
        self.i = 0

    def session(self, sid: str, *, top: bool = False) -> list[str]:
        out: list[str] = []
        turn = 0
        while self.i < len(self.lines):
            line = self.lines[self.i]
            self.i += 1
            kind = line["type"]
            if kind == "subagent-end" and line.get("child") == sid:
                break
            if kind == "prompt":
                turn += 1
                out += [f"## Turn {turn}", ""] if top else []
                out += [f"**›** {_block(line['text'])}", ""]
            elif kind == "reasoning":
                if self.options.reasoning:
                    out += [*_quoted("_reasoning:_ " + _block(line["text"])), ""]
            elif kind == "text":
                out += [_block(line["text"]), ""]
            elif kind == "tool-call":
                out.append(f"- → **{terminal_safe(str(line['name']))}** {_arguments(line.get('arguments'))}")
            elif kind == "tool-result":
                out += [_result(line), ""]
            elif kind == "message":  # relayed between agents (a subagent's report, a notice)
                sender = terminal_safe(str(line.get("from")))
                out += [f"- ✉ {sender}: {_one_line(str(line.get('text', '')))}", ""]
            elif kind == "todos":  # a todo_write: the session's task list from here on
                out += [f"- ☰ todo list: {_one_line('; '.join(todo_lines(line['todos'])), 400)}", ""]
            elif kind == "attempt-failed":
                out += [f"- ! model call failed: {terminal_safe(str(line.get('code')))}", ""]
            elif kind == "compaction":
                out += self._compaction(line)
            elif kind == "subagent-start":
                out += self._child(line)
            elif kind == "turn-end":
                usage = usage_text(line.get("usage") or {})
                out += [f"_{terminal_safe(str(line.get('reason')))} · {usage}_", ""]
        return out

    def _compaction(self, line: Line) -> list[str]:
        """``── HEADLINE ──``, the summary quoted; with ``originals`` the replaced messages."""
        out = [f"── {_one_line(str(line['headline']), 400)} ──", ""]
        if line.get("error") is not None:
            return out
        summary = _block(str(line.get("summary", "")))
        out += [*_quoted(summary), ""] if summary else []
        if self.options.originals:
            out += ["_replaced messages:_", ""]
            for message in line.get("originals", []):
                out += _original(message)
        return out

    def _child(self, line: Line) -> list[str]:
        child = str(line["child"])
        label = terminal_safe(str(line.get("label") or child[:8]))
        head = f"**⇢ {line['kind']} · {label}** · session `{terminal_safe(child)}`"
        body = self.session(child)  # always consumed, shown only with children
        if not self.options.children:
            return ["", f"- {head} (`dsh log {terminal_safe(child)}`)"]
        text = "\n".join([head, "", *body]).rstrip()
        return ["", *_quoted(text), ""]


def transcript_markdown(sessions: Mapping[str, LoadedSession], root: str, options: ViewOptions) -> str:
    """The Markdown transcript of ``root`` (its descendants must be in ``sessions`` to be shown)."""
    loaded = sessions[root]
    d = derive(loaded.header, loaded.events, loaded.inherited_event_count)
    facts = [f"session `{terminal_safe(root)}`", d.status]
    if d.model:
        facts.append(terminal_safe(d.model))
    facts.append(f"created {format_time(loaded.header.created_at)}")
    if d.kind:
        turn = branch_turn(loaded.events, loaded.inherited_event_count)
        at = f" at turn {turn}" if turn is not None else ""
        facts.append(f"{d.kind} of `{terminal_safe(str(loaded.header.parent_session))}`{at}")
    walk = walk_transcript(sessions, root, detail=True)  # one fold: the lines and the spend
    body = _Writer(walk.lines, options).session(root, top=True)
    spent = spend_lines(tree_spend(sessions, root, walk.ledgers), PriceTable.load())
    text = "\n".join([f"# {terminal_safe(d.title)}", "", " · ".join(facts), "", *body, *spent])
    return text.rstrip() + "\n"


def spend_lines(spend: TreeSpend, prices: PriceTable) -> list[str]:
    """``## Usage``: the tree's calls, tokens and cost, then each session's own (each once)."""
    ledger = spend.ledger
    out = ["## Usage", ""]
    count = len(spend.sessions)
    out.append(f"- tree: {count} session{'s' if count != 1 else ''}, {spent_text(ledger, prices)}")
    for one in spend.sessions:
        whose = (
            "this session" if one.session == spend.root else f"child of `{terminal_safe(str(one.parent))}`"
        )
        out.append(f"- `{terminal_safe(one.session)}` ({whose}): {spent_text(one.ledger, prices)}")
    return [*out, ""]

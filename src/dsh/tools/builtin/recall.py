"""``history_search`` and ``history_read``: the model's recall of what compactions replaced.

Both read the calling session's log (``AgentHandle.events``) through
:func:`dsh.events.recall.replaced_spans` — no index, no model call — and answer ordinary
tool results. A replaced message reads as a transcript line (``User:``, ``Assistant:``,
``Tool call``, ``Tool result``): the same text is what ``history_search`` scans and what
``history_read`` pages through. Which sessions offer them: ``docs/decisions/2026-12-06-recall-tools.md``.
"""

from __future__ import annotations

from pydantic import Field

from dsh.events.recall import Original, ReplacedSpan, replaced_spans
from dsh.tools.base import Tool, ToolContext, ToolKind, ToolLike, ToolOutput
from dsh.tools.codes import tool_error
from dsh.tools.schema import ToolArgs

PAGE = 8_000
"""Characters of transcript one ``history_read`` answer shows."""
AROUND = 80
"""Characters of context on each side of a search hit."""
DEFAULT_LIMIT = 10
MAX_LIMIT = 50


def transcript(original: Original) -> str:
    """One replaced message as transcript lines (the text searched and read)."""
    m = original.message
    if m.tool_results:
        return "\n".join(
            f"Tool result ({r.call_id}){' [error]' if r.is_error else ''}: {r.text}" for r in m.tool_results
        )
    who = "Assistant" if m.role == "assistant" else "User"
    lines = [f"{who}: {m.text}"] if m.text or not m.tool_calls else []
    lines += [f"Tool call {c.name} ({c.call_id}): {c.arguments}" for c in m.tool_calls]
    return "\n".join(lines)


def _where(span: ReplacedSpan, original: Original) -> str:
    turn = f"turn {original.turn}" if original.turn is not None else "between turns"
    return f"{span.name} · {turn} · #{original.seq}"


def _spans(ctx: ToolContext) -> list[ReplacedSpan]:
    if ctx.agent is None:
        raise tool_error("the history tools require an owning agent session")
    spans = replaced_spans(ctx.agent.events)
    if not spans:
        raise tool_error("nothing has been compacted in this session")
    return spans


def _snippet(text: str, at: int, length: int) -> str:
    start, end = max(0, at - AROUND), min(len(text), at + length + AROUND)
    body = " ".join(text[start:end].split())
    return f"{'…' if start else ''}{body}{'…' if end < len(text) else ''}"


class HistorySearchArgs(ToolArgs):
    query: str = Field(description="Literal text to find (case-insensitive), e.g. a name, path or sentence.")
    limit: int | None = Field(
        None, description=f"At most this many matching messages (default {DEFAULT_LIMIT}, max {MAX_LIMIT})."
    )


class HistorySearchTool(Tool[HistorySearchArgs]):
    """Find literal text in the messages compactions replaced."""

    name = "history_search"
    args_model = HistorySearchArgs
    acp_kind: ToolKind = "search"
    description = (
        "Search the original messages that compaction replaced with a <compacted-summary> "
        "checkpoint (the user's words, your answers and tool calls, tool results), read back "
        "from the session log. Case-insensitive literal match; each hit names its compaction "
        "(c<N>), turn and message (#seq) — read the whole span with history_read."
    )
    concurrency_safe = True

    async def call(self, args: HistorySearchArgs, ctx: ToolContext) -> ToolOutput:
        query = args.query.strip()
        if not query:
            raise tool_error("query must be a non-empty string")
        limit = DEFAULT_LIMIT if args.limit is None else args.limit
        if not 1 <= limit <= MAX_LIMIT:
            raise tool_error(f"limit must be between 1 and {MAX_LIMIT}")
        needle = query.lower()
        scanned, hits = 0, []
        for span in _spans(ctx):
            for original in span.originals:
                scanned += 1
                text = transcript(original)
                at = text.lower().find(needle)
                if at >= 0:
                    count = text.lower().count(needle)
                    more = f" ({count} matches)" if count > 1 else ""
                    hits.append(f"{_where(span, original)}{more}: {_snippet(text, at, len(query))}")
        meta = {"scanned": scanned, "matched": len(hits), "truncated": len(hits) > limit}
        if not hits:
            return ToolOutput.text(f"No match for {query!r} in {scanned} replaced messages.", meta=meta)
        head = f"{len(hits)} of {scanned} replaced messages match {query!r}"
        if len(hits) > limit:
            head += f" (showing the first {limit})"
        return ToolOutput.text("\n".join([head + ":", *hits[:limit]]), meta=meta)


class HistoryReadArgs(ToolArgs):
    compaction: str | None = Field(
        None, description="A compaction: its c<N> name (as history_search shows) or its id."
    )
    turn: int | None = Field(None, description="A turn number: that turn's replaced messages.")
    seq: int | None = Field(None, description="One replaced message, by its #seq.")
    offset: int | None = Field(
        None, description="Character offset to continue from (the previous answer names it)."
    )


def _select(
    spans: list[ReplacedSpan], args: HistoryReadArgs
) -> tuple[str, list[tuple[ReplacedSpan, Original]]]:
    """The heading and the messages ``args`` names, or the one-line refusal."""
    given = [a for a in (args.compaction, args.turn, args.seq) if a is not None]
    if len(given) != 1:
        raise tool_error(
            "give one of compaction, turn or seq" if not given else "give only one of compaction, turn or seq"
        )
    every = [(s, o) for s in spans for o in s.originals]
    if args.compaction is not None:
        span = next((s for s in spans if s.names(args.compaction)), None)
        if span is None:
            known = ", ".join(s.name for s in spans)
            raise tool_error(f'unknown compaction "{args.compaction}" (this session\'s: {known})')
        folds = f"; folds in {', '.join(span.nested)}" if span.nested else ""
        return (
            f"{span.name} (compaction {span.compaction_id}): {len(span.originals)} replaced messages{folds}",
            [(span, o) for o in span.originals],
        )
    if args.turn is not None:
        chosen = [(s, o) for s, o in every if o.turn == args.turn]
        if not chosen:
            turns = ", ".join(map(str, sorted({o.turn for _, o in every if o.turn is not None})))
            raise tool_error(f"turn {args.turn} has no replaced messages (replaced turns: {turns or 'none'})")
        return f"turn {args.turn}: {len(chosen)} replaced messages", chosen
    chosen = [(s, o) for s, o in every if o.seq == args.seq]
    if not chosen:
        raise tool_error(f"message #{args.seq} was not replaced by a compaction")
    return f"message #{args.seq}", chosen[:1]


class HistoryReadTool(Tool[HistoryReadArgs]):
    """Read replaced messages back as a transcript, a page at a time."""

    name = "history_read"
    args_model = HistoryReadArgs
    acp_kind: ToolKind = "read"
    description = (
        "Read the original messages a compaction replaced, as a User/Assistant/Tool-result "
        "transcript from the session log: a whole compaction (c<N>), a turn, or one message "
        f"(#seq). Answers at most {PAGE} characters; continue with the offset it names."
    )
    concurrency_safe = True

    async def call(self, args: HistoryReadArgs, ctx: ToolContext) -> ToolOutput:
        heading, chosen = _select(_spans(ctx), args)
        body = "\n\n".join(f"--- {_where(s, o)}\n{transcript(o)}" for s, o in chosen)
        text = f"{heading}\n\n{body}"
        offset = args.offset or 0
        if offset < 0:
            raise tool_error("offset must be a non-negative integer")
        if offset and offset >= len(text):
            raise tool_error(f"offset {offset} is past the end of the span ({len(text)} characters)")
        end = min(len(text), offset + PAGE)
        more = end < len(text)
        footer = (
            f"(characters {offset}-{end} of {len(text)}; continue with offset={end})"
            if more
            else "(end of the span)"
        )
        meta = {"offset": offset, "end": end, "total": len(text)}
        return ToolOutput.text(f"{text[offset:end]}\n{footer}", meta=meta)


def recall_tools() -> list[ToolLike]:
    """Fresh ``history_search`` and ``history_read``."""
    return [HistorySearchTool(), HistoryReadTool()]

"""What the viewer shows, derived from stored events: list rows, lineage trees, transcript items.

Pure functions of the log (plus the store reads that fetch it). Nothing here renders HTML:
templates escape every string they are given, so recorded content stays inert.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh import jsonx
from dsh.events import Event
from dsh.events.messages import joined_text
from dsh.events.payloads import (
    assistant_blocks_of,
    blocks_of,
    message_of,
    request_header_of,
    turn_end_kind,
    usage_of,
)
from dsh.events.vocabulary import (
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    HOOK_RESULT,
    REQUEST_HEADER,
    SESSION_END_SEED,
    SESSION_TITLE,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
from dsh.session.digest import Derived, derive, session_json, text_of
from dsh.store.base import EventStore, SessionSummary

SUBAGENT_TOOLS = frozenset({"subagent", "subagent_fork"})


def summary_json(summary: SessionSummary) -> dict[str, Any]:
    """The session object of ``dsh sessions list --json`` (same keys, same values)."""
    return session_json(summary.header, summary.inherited_event_count, summary.event_count)


class DeriveCache:
    """``Derived`` per session, recomputed only when the session's event count changes."""

    def __init__(self, store: EventStore, limit: int = 50_000) -> None:
        self.store = store
        self.limit = limit
        self._cache: dict[str, tuple[int, Derived]] = {}

    async def get(self, summary: SessionSummary) -> Derived:
        sid = summary.header.id
        hit = self._cache.get(sid)
        if hit is not None and hit[0] == summary.event_count and hit[1].status != "running":
            return hit[1]
        events = await self.store.read_from(sid, 0)
        value = derive(summary.header, events, summary.inherited_event_count)
        if len(self._cache) >= self.limit:
            self._cache.clear()
        self._cache[sid] = (len(events), value)
        return value


# --------------------------------------------------------------------------- list


@dataclass(frozen=True, slots=True)
class Row:
    summary: SessionSummary
    derived: Derived
    children: int
    depth: int = 0
    """How deep under its listed parent the row is nested (0: shown at the top level)."""

    def to_json(self) -> dict[str, Any]:
        d = self.derived
        return {
            **summary_json(self.summary),
            "title": d.title,
            "firstPrompt": d.first_prompt,
            "model": d.model,
            "lastActivity": d.last_activity,
            "status": d.status,
            "children": self.children,
        }


SORTS = ("created", "events", "children", "id", "activity", "status", "title")
"""Sort keys of the sessions page; the last three derive every session first (see the README)."""
CHEAP_SORTS = frozenset({"created", "events", "children", "id"})


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[Row]
    total: int
    matched: int
    page: int
    pages: int
    per_page: int


def _matches(query: str, summary: SessionSummary, derived: Derived | None) -> bool:
    h = summary.header
    hay = [h.id, h.cwd or "", h.origin or "", h.agent_preset or "", h.parent_session or ""]
    if derived is not None:
        hay += [derived.title, derived.first_prompt, derived.model or "", derived.status]
    q = query.casefold()
    return any(q in s.casefold() for s in hay)


async def list_page(
    store: EventStore,
    cache: DeriveCache,
    *,
    query: str = "",
    sort: str = "created",
    descending: bool = True,
    page: int = 1,
    per_page: int = 50,
) -> Page:
    """One page of the sessions list: filtered by ``query``, sorted, then derived row by row.

    Sorting by header fields derives only the rows shown; a search or a sort by a derived
    field (activity, status, title) derives every session (cached per event count).
    """
    summaries = await store.list_sessions()
    children: dict[str, int] = {}
    for s in summaries:
        if s.header.parent_session is not None:
            children[s.header.parent_session] = children.get(s.header.parent_session, 0) + 1
    needs_all = bool(query) or sort not in CHEAP_SORTS
    derived: dict[str, Derived] = {}
    if needs_all:
        for s in summaries:
            derived[s.header.id] = await cache.get(s)
    chosen = [s for s in summaries if not query or _matches(query, s, derived.get(s.header.id))]

    def key(s: SessionSummary) -> Any:
        h = s.header
        if sort == "events":
            return (s.event_count, h.created_at, h.id)
        if sort == "children":
            return (children.get(h.id, 0), h.created_at, h.id)
        if sort == "id":
            return (h.id,)
        if sort in ("activity", "status", "title"):
            d = derived[h.id]
            first: Any = {"activity": d.last_activity or 0, "status": d.status, "title": d.title.casefold()}[
                sort
            ]
            return (first, h.created_at, h.id)
        return (h.created_at, h.id)

    chosen.sort(key=key, reverse=descending)
    nested = nest(chosen)
    per_page = max(1, min(per_page, 500))
    pages = max(1, -(-len(nested) // per_page))
    page = max(1, min(page, pages))
    window = nested[(page - 1) * per_page : page * per_page]
    rows = []
    for s, depth in window:
        d = derived.get(s.header.id) or await cache.get(s)
        rows.append(Row(s, d, children.get(s.header.id, 0), depth))
    return Page(rows, len(summaries), len(chosen), page, pages, per_page)


def nest(ordered: Sequence[SessionSummary]) -> list[tuple[SessionSummary, int]]:
    """Each session with its depth, every child right under its parent (children in the given
    order); a child whose parent is not listed stays a top row. Cycle-safe: each id once."""
    present = {s.header.id for s in ordered}
    kids: dict[str, list[SessionSummary]] = {}
    for s in ordered:
        parent = s.header.parent_session
        if parent is not None and parent in present and parent != s.header.id:
            kids.setdefault(parent, []).append(s)
    roots = [
        s
        for s in ordered
        if not (s.header.parent_session in present and s.header.parent_session != s.header.id)
    ]
    out: list[tuple[SessionSummary, int]] = []
    seen: set[str] = set()
    for root in [*roots, *ordered]:  # the second pass reaches sessions only in a parent cycle
        stack = [(root, 0)]
        while stack:
            s, depth = stack.pop()
            if s.header.id in seen:
                continue
            seen.add(s.header.id)
            out.append((s, depth))
            stack.extend((c, depth + 1) for c in reversed(kids.get(s.header.id, [])))
    return out


# --------------------------------------------------------------------------- lineage


@dataclass(slots=True)
class Node:
    summary: SessionSummary
    derived: Derived
    children: list[Node] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.summary.header.id


async def lineage(store: EventStore, cache: DeriveCache, session_id: str) -> Node:
    """The tree holding ``session_id``: from its oldest stored ancestor down to every descendant."""
    summaries = await store.list_sessions()
    by_id = {s.header.id: s for s in summaries}
    root = session_id
    seen = {root}
    while True:
        parent = by_id[root].header.parent_session if root in by_id else None
        if parent is None or parent not in by_id or parent in seen:
            break
        seen.add(parent)
        root = parent
    kids: dict[str, list[SessionSummary]] = {}
    for s in summaries:
        if s.header.parent_session is not None:
            kids.setdefault(s.header.parent_session, []).append(s)
    placed: set[str] = set()

    async def build(summary: SessionSummary) -> Node:
        placed.add(summary.header.id)
        node = Node(summary, await cache.get(summary))
        for child in kids.get(summary.header.id, []):
            if child.header.id not in placed:
                node.children.append(await build(child))
        return node

    return await build(by_id[root])


def find(node: Node, session_id: str) -> Node | None:
    """The node for ``session_id`` in the tree under ``node``."""
    if node.id == session_id:
        return node
    for child in node.children:
        hit = find(child, session_id)
        if hit is not None:
            return hit
    return None


@dataclass(frozen=True, slots=True)
class Cut:
    """A fork child's inherited prefix ends before ``seq`` on its parent's timeline."""

    seq: int
    child: str
    label: str | None


def fork_cuts(node: Node) -> list[Cut]:
    """Each fork child's cut on this session's timeline (seq order)."""
    cuts = [
        Cut(c.summary.inherited_event_count, c.id, c.derived.label)
        for c in node.children
        if c.derived.kind == "fork" and c.summary.inherited_event_count > 0
    ]
    return sorted(cuts, key=lambda c: (c.seq, c.child))


# --------------------------------------------------------------------------- transcript


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


def pretty_json(value: object) -> str:
    """``value`` as indented JSON text (strings that hold JSON are parsed first)."""
    return _pretty(value)


class TranscriptBuilder:
    """Turns events into transcript items, one event at a time (the page and the live feed share it)."""

    def __init__(self, cut: int, children_by_call: Mapping[str, str]) -> None:
        self.cut = cut
        self.children_by_call = dict(children_by_call)
        self.tool_names: dict[str, str] = {}
        self.turn: int | None = None

    def feed(self, event: Event) -> list[Item]:
        data: dict[str, Any] = event.data if isinstance(event.data, dict) else {}
        etype = event.type
        inherited = event.seq < self.cut
        turn = data.get("turn") if isinstance(data.get("turn"), int) else self.turn

        def item(kind: str, **fields: Any) -> Item:
            return Item(kind, event.seq, turn, inherited, fields)

        if etype == TURN_START:
            self.turn = turn
            return [item("turn-start")]
        if etype == USER_MESSAGE:
            source = data.get("source")
            who = source.get("kind") if isinstance(source, dict) else None
            return [item("prompt", text=text_of(data), source=who or "user")]
        if etype == REQUEST_HEADER:
            config = (request_header_of(event) or {}).get("config")
            model = config.get("model") if isinstance(config, dict) else None
            return [item("request", model=model, reason=data.get("reason"))]
        if etype == ASSISTANT_MESSAGE:
            out: list[Item] = []
            for block in assistant_blocks_of(event) or []:
                btype = block.get("type")
                if btype == "reasoning" and block.get("text"):
                    out.append(item("reasoning", text=str(block["text"])))
                elif btype == "text" and block.get("text"):
                    out.append(item("answer", text=str(block["text"])))
            usage = usage_of(event)
            if usage is not None:
                out.append(item("usage", usage=usage, step=data.get("step")))
            return out
        if etype == ASSISTANT_ATTEMPT:
            failure = data.get("failure") if isinstance(data.get("failure"), dict) else {}
            return [
                item(
                    "attempt",
                    code=failure.get("code") if isinstance(failure, dict) else None,
                    message=failure.get("message") if isinstance(failure, dict) else None,
                    step=data.get("step"),
                )
            ]
        if etype == TOOL_CALL:
            call_id = str(data.get("callId", ""))
            name = str(data.get("name", ""))
            self.tool_names[call_id] = name
            child = self.children_by_call.get(call_id) if name in SUBAGENT_TOOLS else None
            return [
                item(
                    "tool-call",
                    name=name,
                    call_id=call_id,
                    arguments=_pretty(data.get("arguments")),
                    child=child,
                    subagent=name in SUBAGENT_TOOLS,
                )
            ]
        if etype == TOOL_RESULT:
            out = []
            for block in blocks_of(message_of(event)):
                if block.get("type") == "tool-result":
                    call_id = str(block.get("toolCallId", ""))
                    inner = block.get("content")
                    out.append(
                        item(
                            "tool-result",
                            call_id=call_id,
                            name=self.tool_names.get(call_id),
                            text=joined_text(inner) if isinstance(inner, list) else "",
                            is_error=bool(block.get("isError")),
                            child=self.children_by_call.get(call_id),
                        )
                    )
            return out
        if etype == HOOK_RESULT:
            return [
                item(
                    "hook",
                    point=data.get("point"),
                    handler=data.get("handlerId"),
                    decision=data.get("decision"),
                    exit_code=data.get("exitCode"),
                    duration=data.get("durationMs"),
                )
            ]
        if etype == TURN_END:
            self.turn = None
            return [item("turn-end", reason=turn_end_kind(event))]
        if etype == SESSION_END_SEED:
            return [item("cut", seq_cut=event.seq)]
        if etype == SESSION_TITLE:
            return [item("title", title=str(data.get("title", "")))]
        return []


def children_by_call(children: Iterable[Node]) -> dict[str, str]:
    """Tool call id → child session id, from each child's ``subagent/descriptor``."""
    return {c.derived.call_id: c.id for c in children if c.derived.call_id}


def transcript(events: Sequence[Event], cut: int, by_call: Mapping[str, str]) -> list[Item]:
    """Every transcript item of a session's events."""
    builder = TranscriptBuilder(cut, by_call)
    return [item for event in events for item in builder.feed(event)]

"""What the viewer shows, derived from stored events: list rows and lineage trees (the
transcript is :mod:`dsh.ui.transcript`).

Pure functions of the log (plus the store reads that fetch it). Nothing here renders HTML:
templates escape every string they are given, so recorded content stays inert.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh.events.lineage import ancestors
from dsh.session.digest import Derived, derive
from dsh.session.prices import PriceTable
from dsh.session.spend import TreeSpend, spent_text
from dsh.session.timeline import SessionTree, TreeNode
from dsh.store.base import EventStore, ListsNewest, SessionSummary
from dsh.ui.rows import DeriveCache, Row, child_counts

SORTS = ("created", "events", "children", "id", "activity", "status", "title")
"""Sort keys of the sessions page; the last three derive every session first (see this package's README)."""
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

    Sorting by header fields derives (or reads the kept digests of) only the rows shown; a
    search or a sort by a derived field (activity, status, title) derives every session
    (cached per event count). The default view (newest first, no search) of a store that
    ``ListsNewest`` reads only the sessions it shows (:func:`_newest_page`).
    """
    per_page = max(1, min(per_page, 500))
    if not query and sort == "created" and descending and isinstance(store, ListsNewest):
        newest = await _newest_page(store, cache, page, per_page)
        if newest is not None:
            return newest
    summaries = await store.list_sessions()
    children = child_counts(summaries)
    needs_all = bool(query) or sort not in CHEAP_SORTS
    derived: dict[str, Derived] = {}
    if needs_all:
        await cache.prime()
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
    page, pages = _paged(len(chosen), page, per_page)  # nesting shows each session once
    window = nest(chosen, page * per_page)[(page - 1) * per_page :]
    rows = await _page_rows(cache, window, children, derived)
    return Page(rows, len(summaries), len(chosen), page, pages, per_page)


async def _page_rows(
    cache: DeriveCache,
    window: Sequence[tuple[SessionSummary, int]],
    children: dict[str, int],
    derived: dict[str, Derived],
) -> list[Row]:
    """A page's rows: each session's digest (``derived``'s, or the cache's: a page reads its
    rows' digests only), its children count and its depth."""
    await cache.prime([s.header.id for s, _ in window])
    rows = [
        Row(s, derived.get(s.header.id) or await cache.get(s), children.get(s.header.id, 0), depth)
        for s, depth in window
    ]
    await cache.flush()
    return rows


def _paged(count: int, page: int, per_page: int) -> tuple[int, int]:
    """The page shown (asked for, kept within 1..pages) and how many pages ``count`` rows make."""
    pages = max(1, -(-count // per_page))
    return max(1, min(page, pages)), pages


async def _newest_page(store: ListsNewest, cache: DeriveCache, page: int, per_page: int) -> Page | None:
    """The newest-first page from the newest top rows and their descendants
    (``ListsNewest.newest_roots``: each top row brings at least one row, so ``page * per_page``
    of them are enough); ``None`` when they do not fill the page and the store holds more:
    sessions only in a parent cycle, which :func:`nest` shows after every tree."""
    total, listed = await store.newest_roots(max(1, page) * per_page)
    page, pages = _paged(total, page, per_page)
    nested = nest(listed[::-1], page * per_page)  # listed oldest first, ids unique: reversed is newest first
    if len(nested) < page * per_page and len(listed) < total:
        return None
    children = child_counts(listed)  # every child of a listed session is listed (its descendants are)
    rows = await _page_rows(cache, nested[(page - 1) * per_page :], children, {})
    return Page(rows, total, total, page, pages, per_page)


def nest(ordered: Sequence[SessionSummary], limit: int | None = None) -> list[tuple[SessionSummary, int]]:
    """Each session with its depth, every child right under its parent (children in the given
    order); a child whose parent is not listed stays a top row. Cycle-safe: each id once.
    ``limit``: only the first so many (a page stops nesting where it ends)."""
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
        if root.header.id in seen:
            continue
        stack = [(root, 0)]
        while stack:
            s, depth = stack.pop()
            if s.header.id in seen:
                continue
            if len(out) == limit:
                return out
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
    """The tree holding ``session_id``: from its oldest stored ancestor down to every descendant
    (built by :class:`~dsh.session.timeline.SessionTree`; ``cache`` is kept for the callers)."""
    return (await lineage_tree(store, session_id))[0]


async def lineage_tree(store: EventStore, session_id: str) -> tuple[Node, SessionTree]:
    """:func:`lineage` and the :class:`~dsh.session.timeline.SessionTree` it renders."""
    summaries = await store.list_sessions()
    parents = {s.header.id: s.header.parent_session for s in summaries}
    found = ancestors(session_id, lambda sid: parents.get(sid) if parents.get(sid) in parents else None)
    tree = await SessionTree.load(store, found[-1] if found else session_id)

    def node(tree_node: TreeNode) -> Node:
        loaded = tree_node.session
        summary = SessionSummary(loaded.header, tree_node.cut, len(loaded.events))
        derived = derive(loaded.header, loaded.events, tree_node.cut)
        return Node(summary, derived, [node(c) for c in tree_node.children])

    return node(tree.root), tree


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


def spend_view(spent: TreeSpend, session_id: str, prices: PriceTable) -> list[tuple[str, str]]:
    """``(label, text)``: the session's own calls, tokens and cost, then its tree's (each once)."""
    mine = next((s.ledger for s in spent.sessions if s.session == session_id), None)
    rows = [("this session", spent_text(mine, prices))] if mine is not None else []
    count = len(spent.sessions)
    rows.append((f"tree ({count} session{'s' if count != 1 else ''})", spent_text(spent.ledger, prices)))
    return rows

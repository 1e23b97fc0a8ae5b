"""The viewer's Starlette application: read-only routes over one store, HTML and JSON, plus SSE.

Routes: ``/`` sessions, ``/s/{id}`` session, ``/s/{id}/events`` raw events, ``/s/{id}/live``
server-sent events, ``/api/sessions`` and ``/api/sessions/{id}`` JSON, ``/report`` (when a
replay report was given), ``/static/ui.css`` and ``/static/ui.js``. Nothing writes to the
store; every page carries a Content-Security-Policy that allows only the viewer's own script.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from dsh import jsonx
from dsh.errors import SessionNotFoundError
from dsh.events import Event
from dsh.hosts import HostPolicy
from dsh.ids import session_id_problem
from dsh.loop import Feed
from dsh.replay.reuse import tree_reuse
from dsh.session import timeline as tl
from dsh.session.digest import derive, digest_of
from dsh.session.prices import PriceTable
from dsh.session.spend import tree_spend
from dsh.store.base import EventStore, SessionSummary
from dsh.store.prefix import ids_with_prefix
from dsh.store.tail import DEFAULT_POLL_INTERVAL, follow
from dsh.ui.assets import CSS, JS
from dsh.ui.chunks import ChunkHub
from dsh.ui.diff_page import compare, context
from dsh.ui.guard import HostGuard
from dsh.ui.report import panes
from dsh.ui.rows import DeriveCache
from dsh.ui.templates import environment
from dsh.ui.transcript import Item, TranscriptBuilder, pretty_json
from dsh.ui.views import SORTS, find, fork_cuts, lineage_tree, list_page, spend_view

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
COLUMNS = [
    ("title", "title", ""),
    ("", "first prompt", ""),
    ("", "model", ""),
    ("created", "created", ""),
    ("activity", "last activity", ""),
    ("status", "status", ""),
    ("events", "events", "num"),
    ("children", "children", "num"),
]


@dataclass(slots=True)
class UiState:
    store: EventStore
    cache: DeriveCache
    label: str
    report_html: str | None
    poll_interval: float
    hub: ChunkHub


def _state(request: Request) -> UiState:
    state: UiState = request.app.state.ui
    return state


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


_ENV = environment()
_ENV.globals["pretty_json"] = pretty_json


def _html(template: str, state: UiState, status_code: int = 200, **context: Any) -> HTMLResponse:
    body = _ENV.get_template(template).render(
        store_label=state.label, has_report=state.report_html is not None, **context
    )
    return HTMLResponse(body, status_code=status_code, headers=SECURITY_HEADERS)


def _not_found(state: UiState, session_id: str) -> HTMLResponse:
    body = _ENV.from_string(
        '{% extends "base.html" %}{% block main %}<h1>Not found</h1>'
        '<p>No session {{ sid }} in this store.</p><p><a href="/">All sessions</a></p>{% endblock %}'
    ).render(store_label=state.label, has_report=state.report_html is not None, sid=session_id)
    return HTMLResponse(body, status_code=404, headers=SECURITY_HEADERS)


async def sessions_page(request: Request) -> Response:
    state = _state(request)
    q = request.query_params.get("q", "").strip()
    sort = request.query_params.get("sort", "created")
    sort = sort if sort in SORTS else "created"
    direction = "asc" if request.query_params.get("dir") == "asc" else "desc"
    page = await list_page(
        state.store,
        state.cache,
        query=q,
        sort=sort,
        descending=direction == "desc",
        page=_int(request.query_params.get("page"), 1),
        per_page=_int(request.query_params.get("per"), 50),
    )

    def link(**changes: Any) -> str:
        params = {"q": q, "sort": sort, "dir": direction, "page": page.page, "per": page.per_page}
        params.update(changes)
        return "/?" + urlencode({k: v for k, v in params.items() if v != ""})

    def sort_link(key: str) -> str:
        flip = "asc" if sort == key and direction == "desc" else "desc"
        return link(sort=key, dir=flip, page=1)

    return _html(
        "sessions.html",
        state,
        page=page,
        q=q,
        sort=sort,
        dir=direction,
        columns=COLUMNS,
        sort_link=sort_link,
        page_link=lambda n: link(page=n),
    )


async def sessions_json(request: Request) -> Response:
    state = _state(request)
    page = await list_page(
        state.store,
        state.cache,
        query=request.query_params.get("q", "").strip(),
        sort=request.query_params.get("sort", "created"),
        descending=request.query_params.get("dir") != "asc",
        page=_int(request.query_params.get("page"), 1),
        per_page=_int(request.query_params.get("per"), 50),
    )
    return JSONResponse(
        {
            "total": page.total,
            "matched": page.matched,
            "page": page.page,
            "pages": page.pages,
            "sessions": [row.to_json() for row in page.rows],
        },
        headers=SECURITY_HEADERS,
    )


async def _session_context(state: UiState, session_id: str) -> dict[str, Any]:
    loaded = await state.store.load(session_id)
    root, tree = await lineage_tree(state.store, session_id)
    node = find(root, session_id)
    cut = loaded.inherited_event_count
    builder = TranscriptBuilder(session_id, cut, tree.by_call, loaded.header)
    items: list[Item] = [item for event in loaded.events for item in builder.feed(event)]
    derived = digest_of(loaded.header, builder.state)
    sessions = {sid: n.session for sid, n in tree.nodes.items()}
    prices = PriceTable.load()
    spent = tree_spend(sessions, root.id)
    return {
        "spend": spend_view(spent, session_id, prices),
        "reuse": [r for r in tree_reuse(sessions, root.id) if r.session == session_id],
        "h": loaded.header,
        "warnings": loaded.warnings,  # a torn tail left out, events missing from a cut file
        "events": loaded.events,
        "cut": cut,
        "derived": derived,
        "root": root,
        "cuts": fork_cuts(node) if node is not None else [],
        "inherited_items": [i for i in items if i.inherited],
        "own_items": [i for i in items if not i.inherited],
    }


def _bad_id(sid: str) -> bool:
    """An id no session can have (``dsh.ids``): answered 404 before the store is asked."""
    return session_id_problem(sid) is not None


def _shown_id(sid: str) -> str:
    return sid if len(sid) <= 80 else sid[:80] + "…"


async def _session_view(request: Request, template: str) -> Response:
    state = _state(request)
    sid = request.path_params["session_id"]
    if _bad_id(sid):
        return _not_found(state, _shown_id(sid))
    try:
        context = await _session_context(state, sid)
    except SessionNotFoundError:
        return await _by_prefix(request, state, sid)
    return _html(template, state, **context)


async def _by_prefix(request: Request, state: UiState, prefix: str) -> Response:
    """``/s/<prefix>``: one stored id starts with it → a redirect there; several → a page
    listing them (300); none → 404. (``dsh.store.prefix``, as the CLI resolves ids.)"""
    matches = await ids_with_prefix(state.store, prefix)
    if not matches:
        return _not_found(state, prefix)
    tail = request.url.path[len("/s/") :].split("/", 1)
    rest = f"/{tail[1]}" if len(tail) > 1 else ""
    if len(matches) == 1:
        return RedirectResponse(
            f"/s/{quote(matches[0], safe='')}{rest}", status_code=307, headers=SECURITY_HEADERS
        )
    body = _ENV.from_string(
        '{% extends "base.html" %}{% block main %}<h1>Which session?</h1>'
        "<p>Session id prefix <code>{{ prefix }}</code> matches {{ ids | length }} sessions:</p>"
        '<ul class="candidates">{% for i in ids %}<li>'
        '<a class="mono" href="/s/{{ i | urlencode }}{{ rest }}">{{ i }}</a></li>{% endfor %}</ul>'
        "{% endblock %}"
    ).render(
        store_label=state.label,
        has_report=state.report_html is not None,
        prefix=prefix,
        ids=matches,
        rest=rest,
    )
    return HTMLResponse(body, status_code=300, headers=SECURITY_HEADERS)


async def session_page(request: Request) -> Response:
    return await _session_view(request, "session.html")


async def events_page(request: Request) -> Response:
    return await _session_view(request, "events.html")


async def session_json(request: Request) -> Response:
    state = _state(request)
    sid = request.path_params["session_id"]
    if _bad_id(sid):
        return JSONResponse({"error": f"no session {_shown_id(sid)} in this store"}, status_code=404)
    try:
        loaded = await state.store.load(sid)
    except SessionNotFoundError:
        return JSONResponse({"error": f"no session {sid} in this store"}, status_code=404)
    children = await state.store.children(sid)
    summary = SessionSummary(loaded.header, loaded.inherited_event_count, len(loaded.events))
    d = derive(loaded.header, loaded.events, loaded.inherited_event_count)
    return JSONResponse(
        {
            "id": sid,
            "parentSession": loaded.header.parent_session,
            "isSeeded": loaded.header.is_seeded,
            "inheritedEventCount": summary.inherited_event_count,
            "eventCount": summary.event_count,
            "createdAt": loaded.header.created_at,
            "title": d.title,
            "status": d.status,
            "kind": d.kind,
            "model": d.model,
            "children": [c.header.id for c in children],
            "warnings": list(loaded.warnings),
            "events": [event.to_wire() for event in loaded.events],
        },
        headers=SECURITY_HEADERS,
    )


def _sse(event: str, data: object, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: ".encode() + jsonx.dumps_unchecked(data) + b"\n\n"


async def live(request: Request) -> Response:
    """Server-sent events: each committed event from ``from`` on, as rendered HTML fragments.

    The stream ends (``event: idle``) after a ``turn/end`` that leaves no open turn; the page
    reconnects from the next seq, so a finished session costs no open connection.
    """
    state = _state(request)
    sid = request.path_params["session_id"]
    if _bad_id(sid):
        return JSONResponse({"error": f"no session {_shown_id(sid)} in this store"}, status_code=404)
    try:
        loaded = await state.store.load(sid)
    except SessionNotFoundError:
        return JSONResponse({"error": f"no session {sid} in this store"}, status_code=404)
    start = max(0, min(_int(request.query_params.get("from"), len(loaded.events)), len(loaded.events)))
    cut = loaded.inherited_event_count
    header = loaded.header

    async def children_map() -> dict[tuple[str, str], str]:
        out: dict[tuple[str, str], str] = {}
        for child in await state.store.children(sid):
            d = await state.cache.get(child)
            if d.call_id:
                out[(sid, d.call_id)] = child.header.id
        return out

    builder = TranscriptBuilder(sid, cut, await children_map(), header)
    for event in loaded.events[:start]:
        builder.feed(event)
    items_macro = _ENV.get_template("items.html").module
    render_items: Callable[[list[Item]], str] = items_macro.items  # type: ignore[attr-defined]
    render_row: Callable[[Event, int], str] = items_macro.event_row  # type: ignore[attr-defined]

    async def stream() -> AsyncIterator[bytes]:
        queue: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
        state.hub.subscribe(sid, queue)  # before the first byte: deltas sent once the page is open arrive

        async def pump() -> None:
            try:
                async for event in follow(
                    state.store, sid, start, poll_interval=state.poll_interval, until_turn_end=False
                ):
                    queue.put_nowait(("event", event))
            except Exception as exc:  # handed to the stream, which re-raises it
                queue.put_nowait(("error", exc))

        task = asyncio.create_task(pump())
        try:
            yield b"retry: 1000\n\n"
            while True:
                kind, value = await queue.get()
                if kind == "delta":
                    yield _sse("delta", value)
                    continue
                if isinstance(value, BaseException):
                    raise value
                assert isinstance(value, Event)
                event = value
                items = await _live_items(builder, event, children_map)
                payload = {
                    "seq": event.seq,
                    "type": event.type,
                    "items": str(render_items([e for item in items for e in builder.render(item)])),
                    "row": str(render_row(event, cut)),
                    "status": builder.status(),
                }
                yield _sse("append", payload, event.seq)
                if builder.state.open_turn is None and any(isinstance(i, tl.TurnEnd) for i in items):
                    yield _sse("idle", {"next": event.seq + 1})
                    return
        finally:
            state.hub.unsubscribe(sid, queue)
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={**SECURITY_HEADERS, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _live_items(
    builder: TranscriptBuilder, event: Event, children: Callable[[], Awaitable[dict[tuple[str, str], str]]]
) -> list[tl.Item]:
    """The items of one live event: one fold step; a delegating call's result asks the store
    for the child it started (born after the call, so not known when the page opened)."""
    items = builder.items(event)
    for i, item in enumerate(items):
        if (
            isinstance(item, tl.ToolResult)
            and item.child is None
            and item.call is not None
            and item.call.delegates
        ):
            builder.timeline.children.update(await children())
            child = builder.timeline.children.get((item.session, item.call_id))
            items[i] = replace(item, child=child)
    return items


async def report_page(request: Request) -> Response:
    state = _state(request)
    if state.report_html is None:
        return HTMLResponse("no replay report was given to this viewer", status_code=404)
    return HTMLResponse(state.report_html, headers=SECURITY_HEADERS)


async def diff_page(request: Request) -> Response:
    state = _state(request)
    a, b = request.query_params.get("a", "").strip(), request.query_params.get("b", "").strip()
    diff, error = await compare(state.store, a, b)
    status = 404 if error and "no session" in error else 200
    return _html("diff.html", state, status, a=a, b=b, error=error, panes=panes, **context(diff))


async def css(request: Request) -> Response:
    return Response(CSS, media_type="text/css", headers={"Cache-Control": "max-age=300"})


async def js(request: Request) -> Response:
    return Response(JS, media_type="text/javascript", headers={"Cache-Control": "max-age=300"})


def create_app(
    open_store: Callable[[], EventStore],
    *,
    label: str = "",
    report_html: str | None = None,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    feed: Feed | None = None,
    hosts: HostPolicy | None = None,
) -> Starlette:
    """The viewer over the store ``open_store`` returns (opened at startup, closed at shutdown).

    ``feed``: the feed of a run in this process; its text and reasoning deltas stream to the
    live pages of their session (``event: delta``) before the model call settles.
    ``hosts``: the ``Host`` / ``Origin`` rule (:class:`~dsh.ui.guard.HostGuard`) every request
    passes first; ``dsh ui`` always gives one (``None``, for in-process test clients: none).
    """

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = open_store()
        hub = ChunkHub()
        if feed is not None:
            hub.attach(feed, asyncio.get_running_loop())
        app.state.ui = UiState(store, DeriveCache(store), label, report_html, poll_interval, hub)
        try:
            yield
        finally:
            await store.close()

    routes = [
        Route("/", sessions_page),
        Route("/api/sessions", sessions_json),
        Route("/api/sessions/{session_id:path}", session_json),
        Route("/s/{session_id}/events", events_page),
        Route("/s/{session_id}/live", live),
        Route("/s/{session_id}", session_page),
        Route("/report", report_page),
        Route("/diff", diff_page),
        Route("/static/ui.css", css),
        Route("/static/ui.js", js),
    ]
    middleware = [Middleware(HostGuard, policy=hosts)] if hosts is not None else []
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)

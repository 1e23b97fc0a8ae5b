"""``dsh sessions list``: every session with its title, model, last activity, status, children
and compaction count."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.ages import ago, parse_since
from dsh.cli.columns import Column
from dsh.cli.common import JsonOption, StoreOption, run_async, store_label, user_errors, write_json_line
from dsh.cli.tables import terminal_safe
from dsh.ids import now_ms

if TYPE_CHECKING:
    from dsh.session.prices import PriceTable
    from dsh.session.spend import RowSpend
    from dsh.store.base import EventStore
    from dsh.ui.rows import Row


def spends_of(rows: list[Row], prices: PriceTable) -> dict[str, RowSpend]:
    """Each row's own and tree spend, priced by the table and the user's override file."""
    from dsh.session.spend import row_spends

    parents = {r.summary.header.id: r.summary.header.parent_session for r in rows}
    return row_spends(parents, {r.summary.header.id: r.derived for r in rows}, prices)


async def list_rows(
    store: EventStore, newest: int | None = None, prices: PriceTable | None = None
) -> list[Row]:
    """A row per stored session, oldest first: its summary, what its events say, its child
    count. ``newest``: only the N most recently created and their descendants (a tree's cost
    holds them, and their child counts are whole) are read at all
    (``dsh.store.newest``); a listing's work is bounded by what it shows. ``prices``: each
    session's own cost is kept in its digest (``PriceTable.keeping_cost``), so the next
    listing need not import the bundled price table."""
    from dsh.store.newest import newest_sessions
    from dsh.ui.rows import DeriveCache, Row, child_counts

    listed = await store.list_sessions() if newest is None else await newest_sessions(store, newest)
    summaries = sorted(listed, key=lambda s: (s.header.created_at, s.header.id))
    children = child_counts(summaries)
    cache = DeriveCache(store, price=None if prices is None else prices.keeping_cost)
    await cache.prime(None if newest is None else [s.header.id for s in summaries])
    rows = [Row(s, await cache.get(s), children.get(s.header.id, 0)) for s in summaries]
    await cache.flush()
    return rows


COLUMNS = (
    Column("id"),
    Column("status"),
    Column("kids", right=True),
    Column("compacted", right=True),
    Column("active"),
    Column("cost", right=True),
    Column("model", max_width=20),
    Column("title", flex=True),
)


def _render(rows: list[Row], spends: dict[str, RowSpend], label: str, now: int) -> None:
    from dsh.cli.columns import print_columns
    from dsh.cli.resolve import short_ids

    if not rows:
        typer.echo(f"no sessions in {terminal_safe(label)}")
        return
    short = short_ids([r.summary.header.id for r in rows])
    cells: list[list[str]] = []
    for row in rows:
        h, d = row.summary.header, row.derived
        title = terminal_safe(d.title)
        if h.parent_session is not None:
            parent = short.get(h.parent_session, terminal_safe(h.parent_session[:8]))
            at = f" at turn {d.branch_turn}" if d.branch_turn is not None else ""
            title = f"↳ {d.kind or 'child'} of {parent}{at}: {title}"
        cells.append(
            [
                terminal_safe(short[h.id]),
                d.status,
                str(row.children),
                str(d.compactions),
                ago(d.last_activity, now),
                spends[h.id].tree_cost.short(),
                terminal_safe(d.model or "—"),
                title,
            ]
        )
    print_columns(COLUMNS, cells)


def list_cmd(
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", min=1, help="Show only the N most recently created sessions."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="AGE|DATE",
            help="Only sessions active since then: an age (2d, 12h) or a UTC date (2026-11-30).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """List sessions, oldest first: id, status, children, compactions, last activity, cost, model, title.

    The title is the recorded session/title, else the first prompt, shortened; a child
    session's title says whose child it is. Status is running, completed, interrupted,
    error or empty. Ids are shown as their shortest unique prefix (8 characters or more):
    every command taking an ID accepts a unique prefix. With --json: a list of session
    objects (docs/reference/json-output.md) with "title", "firstPrompt", "model", "lastActivity" (epoch
    ms), "status", "children" (the child count), "compactions" (how many times its history
    was compacted), its own "calls", "tokens" and "cost", and "tree" (sessions, calls, tokens
    and cost of it and every descendant, each counted once). The cost column is the tree's, in
    US dollars: "unknown" when a model has no price ($DSH_PRICES or ~/.dsh/prices.json add
    prices), "+?" when only part of it is priced.
    """
    from dsh.session.prices import PriceTable

    now = now_ms()
    with user_errors():
        cutoff = parse_since(since, "--since", now) if since is not None else None
        prices = PriceTable.load()

    async def body() -> list[Row]:
        from dsh.store.url import open_store

        s = open_store(store, create=False)
        try:
            return await list_rows(s, limit if cutoff is None else None, prices)
        finally:
            await s.close()

    rows = run_async(body)
    with user_errors():
        spends = spends_of(rows, prices)  # before filtering: a tree holds every stored descendant
    if cutoff is not None:
        rows = [r for r in rows if (r.derived.last_activity or r.summary.header.created_at) >= cutoff]
    if limit is not None:
        rows = rows[-limit:]
    with user_errors():
        if as_json:
            write_json_line([row.to_json(spends[row.summary.header.id]) for row in rows])
            return
        _render(rows, spends, store_label(store), now)

"""``dsh sessions rm`` and ``dsh sessions prune``: delete sessions with their descendants."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.ages import parse_age
from dsh.cli.common import JsonOption, StoreOption, fail, run_async, store_label, user_errors, write_json_line
from dsh.cli.tables import terminal_safe, warn
from dsh.errors import SessionBusyError, SessionNotFoundError, UsageError
from dsh.ids import now_ms

if TYPE_CHECKING:
    from dsh.store.base import EventStore


def _confirm(question: str) -> None:
    """Ask on the terminal; refuse (exit 2) when there is none to ask on, stop (exit 1) on no."""
    if not sys.stdin.isatty():
        fail(f"{question} — refusing without a terminal to confirm on: pass --yes", 2)
    if not typer.confirm(question, default=False, err=True):
        fail("nothing deleted", 1)


async def _plan(store: EventStore, roots: list[str]) -> dict[str, list[str]]:
    """Each root → the ids its delete removes (itself first); a root inside another's tree is dropped."""
    from dsh.store.deletion import descendants

    plan: dict[str, list[str]] = {}
    covered: set[str] = set()
    for root in roots:
        tree = await descendants(store, root)
        plan[root] = tree
        covered.update(tree[1:])
    return {root: tree for root, tree in plan.items() if root not in covered}


def _what(plan: dict[str, list[str]]) -> str:
    roots = len(plan)
    total = sum(len(tree) for tree in plan.values())
    kids = total - roots
    names = ", ".join(terminal_safe(r) for r in list(plan)[:3]) + (" …" if roots > 3 else "")
    return f"{roots} session(s) ({names})" + (f" and {kids} descendant(s)" if kids else "")


@dataclass(slots=True)
class _Outcome:
    deleted: list[str]
    skipped: list[str]


async def _delete(
    store: EventStore, plan: dict[str, list[str]], *, keep_going: bool, with_children: bool = True
) -> _Outcome:
    out = _Outcome([], [])
    for root in plan:
        try:
            out.deleted += await store.delete(root, with_children=with_children)
        except SessionNotFoundError:
            continue  # deleted meanwhile (or with an ancestor given too)
        except SessionBusyError as exc:
            if not keep_going:
                raise
            warn(f"skipped {root}: {exc}")
            out.skipped.append(root)
    return out


def rm_cmd(
    session_ids: Annotated[
        list[str], typer.Argument(metavar="ID...", help="Sessions to delete (unique prefixes work).")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    with_children: Annotated[
        bool,
        typer.Option(
            "--with-children",
            help="Also delete forks that hold the session's events by reference (SQLite, PostgreSQL).",
        ),
    ] = False,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete sessions with all their descendants (spawn and fork children, and theirs).

    Asks first unless --yes (without a terminal, --yes is required). A session a live
    writer holds (its lease) refuses the delete with one line and nothing of that session's
    tree is deleted. In SQLite and PostgreSQL a fork holds its parent's events by reference:
    deleting a parent such forks read is refused with one line naming them, unless
    --with-children. Prints each deleted id; with --json: {"deleted": [ids]}.
    """
    from dsh.cli.resolve import resolve_ids
    from dsh.store.url import open_store

    label = store_label(store)

    async def plan_for(s: EventStore) -> dict[str, list[str]]:
        return await _plan(s, await resolve_ids(s, session_ids))

    async def body() -> _Outcome:
        s = open_store(store, create=False)
        try:
            plan = await plan_for(s)
            if not yes:
                _confirm(f"delete {_what(plan)} from {label}?")
            return await _delete(s, plan, keep_going=False, with_children=with_children)
        finally:
            await s.close()

    outcome = run_async(body)
    with user_errors():
        if as_json:
            write_json_line({"deleted": outcome.deleted})
        else:
            for sid in outcome.deleted:
                typer.echo(terminal_safe(sid))
            typer.echo(f"deleted {len(outcome.deleted)} session(s) from {terminal_safe(label)}", err=True)


def prune_cmd(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Delete top-level sessions whose whole tree was last active longer ago (30d, 12h).",
            show_default=False,
        ),
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be deleted.")] = False,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete old top-level sessions with their descendants.

    A tree is old when no session in it had an event for AGE. Sessions a live writer holds
    are skipped with a warning (exit 1). With --json: {"deleted": [ids], "skipped": [ids],
    "dryRun": bool}; with --dry-run "deleted" lists what would go.
    """
    with user_errors():
        age = parse_age(older_than, "--older-than")
        if age <= 0:
            raise UsageError("--older-than must be more than 0")
    from dsh.store.newest import last_activity
    from dsh.store.url import open_store

    label = store_label(store)
    cutoff = now_ms() - age

    async def body() -> _Outcome:
        s = open_store(store, create=False)
        try:
            summaries = {x.header.id: x for x in await s.list_sessions()}
            roots = [sid for sid, x in summaries.items() if x.header.parent_session not in summaries]
            plan = await _plan(s, roots)
            old: dict[str, list[str]] = {}
            for root, tree in plan.items():
                times = [await last_activity(s, summaries[sid]) for sid in tree if sid in summaries]
                if max(times, default=0) < cutoff:
                    old[root] = tree
            if dry_run:
                return _Outcome([sid for tree in old.values() for sid in tree], [])
            return await _delete(s, old, keep_going=True)
        finally:
            await s.close()

    outcome = run_async(body)
    with user_errors():
        if as_json:
            write_json_line({"deleted": outcome.deleted, "skipped": outcome.skipped, "dryRun": dry_run})
        else:
            for sid in outcome.deleted:
                typer.echo(terminal_safe(sid))
            verb = "would delete" if dry_run else "deleted"
            typer.echo(f"{verb} {len(outcome.deleted)} session(s) from {terminal_safe(label)}", err=True)
    if outcome.skipped:
        raise typer.Exit(1)

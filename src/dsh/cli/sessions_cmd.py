"""``dsh sessions``: import, list, show, tree, fork and export the sessions of a store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from dsh.cli.common import (
    HelpGroup,
    JsonOption,
    StoreOption,
    run_async,
    store_label,
    user_errors,
    write_json_line,
)
from dsh.cli.tables import (
    make_console,
    render_session,
    terminal_safe,
    type_counts,
    warn,
)
from dsh.cli.transcript_cmd import ChildrenOption, OriginalsOption, ReasoningOption, print_transcript
from dsh.errors import SessionExistsError

if TYPE_CHECKING:  # what the commands run is imported when they run (see tests/cli/test_startup.py)
    from rich.text import Text
    from rich.tree import Tree

    from dsh.events import Event, SessionHeader
    from dsh.session.timeline import TreeNode
    from dsh.store.base import EventStore, LoadedSession, SessionSummary

T = TypeVar("T")

sessions_app = typer.Typer(
    name="sessions",
    cls=HelpGroup,
    help="Work with the sessions of a store (--store / DSH_STORE): list, show, tree, fork, "
    "export, import, rm, prune, tail.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

IdArgument = Annotated[
    str, typer.Argument(metavar="ID", help="The session id (a unique prefix works).", show_default=False)
]


async def _using(url: str | None, body: Callable[[EventStore], Awaitable[T]], create: bool) -> T:
    """Open the store named by ``url`` (``create``: see ``open_store``), run ``body``, always close it."""
    from dsh.store.url import open_store

    store = open_store(url, create=create)
    try:
        return await body(store)
    finally:
        await store.close()


def _in_store(url: str | None, body: Callable[[EventStore], Awaitable[T]], *, create: bool = False) -> T:
    """Run ``body`` against the store on a fresh event loop; user errors become one line.

    Only the commands that write (import, fork) pass ``create=True``: reading never creates a store.
    """
    return run_async(lambda: _using(url, body, create))


def session_kind(header: SessionHeader, own_events: Sequence[Event]) -> str | None:
    """How a child came to be: ``spawn`` or ``fork``; ``None`` for a top-level session."""
    from dsh.events.descriptor import child_kind

    return child_kind(header, own_events)


def _loaded_json(session: LoadedSession) -> dict[str, Any]:
    from dsh.session.digest import session_json

    return session_json(session.header, session.inherited_event_count, len(session.events))


def _summary_json(summary: SessionSummary) -> dict[str, Any]:
    from dsh.session.digest import session_json

    return session_json(summary.header, summary.inherited_event_count, summary.event_count)


def _ordered(summaries: Sequence[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda s: (s.header.created_at, s.header.id))


# --------------------------------------------------------------------------- import


@dataclass(slots=True)
class _Imported:
    path: str
    session: LoadedSession


async def _import_all(store: EventStore, files: Sequence[Path]) -> list[_Imported]:
    """Decode and check every file first, then store them in one batch: all, or none."""
    from dsh.store.logfile import read_log_file

    pending: list[_Imported] = []
    seen: dict[str, str] = {}
    for path in files:
        decoded = await read_log_file(path)
        session = decoded.for_import()
        sid = session.header.id
        if sid in seen:
            raise SessionExistsError(sid, f"this import (recorded by both {seen[sid]} and {path})")
        if await store.exists(sid):
            raise SessionExistsError(sid, f"the store (not importing {path})")
        seen[sid] = str(path)
        pending.append(_Imported(str(path), session))
    await store.create_batch([item.session for item in pending])  # all of them, or none
    return pending


@sessions_app.command("import")
def import_cmd(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE",
            help="Log files to import (version 0 or 2, plain or .jsonl.zst).",
            show_default=False,
        ),
    ],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import log files into the store, each under its recorded session id.

    Every event keeps its seq, type and data, so the inherited cut never moves. All files
    are checked before anything is stored: an unreadable file, a session id already in the
    store, or the same id in two files refuses the whole import. With --json: a list of
    session objects, each with the "path" it came from.
    """
    imported = _in_store(store, lambda s: _import_all(s, files), create=True)
    with user_errors():
        for item in imported:
            for message in item.session.warnings:
                warn(message)
        if as_json:
            write_json_line([{**_loaded_json(i.session), "path": i.path} for i in imported])
            return
        for item in imported:
            s = item.session
            typer.echo(
                f"imported {terminal_safe(s.header.id)} from {terminal_safe(str(item.path))}: "
                f"{len(s.events)} events, cut {s.inherited_event_count}"
            )


# --------------------------------------------------------------------------- show


@dataclass(slots=True)
class _Shown:
    session: LoadedSession
    children: list[str]


@sessions_app.command("show")
def show_cmd(
    session_id: IdArgument,
    events: Annotated[
        bool, typer.Option("--events", help="Also print every event (with --json: as wire dicts).")
    ] = False,
    transcript: Annotated[
        bool, typer.Option("--transcript", "-t", help="Print the conversation instead (as dsh log ID).")
    ] = False,
    reasoning: ReasoningOption = False,
    children: ChildrenOption = False,
    originals: OriginalsOption = False,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one session: header, inherited cut, event counts per type and children.

    With --transcript: the conversation as `dsh log ID` prints it (--reasoning, --children
    and --originals apply there). With --json: the session object plus "types", "children" and
    "warnings" (and "events", the wire dicts, with --events).
    """
    from dsh.cli.resolve import resolve_id
    from dsh.cli.transcript_view import ViewOptions

    if transcript:
        options = ViewOptions(reasoning=reasoning, children=children, originals=originals)
        print_transcript(store, session_id, options)
        return

    async def body(s: EventStore) -> _Shown:
        sid = await resolve_id(s, session_id)
        loaded = await s.load(sid)
        kids = _ordered(await s.children(sid))
        return _Shown(loaded, [k.header.id for k in kids])

    shown = _in_store(store, body)
    loaded = shown.session
    with user_errors():  # the store already reported loaded.warnings (see run_async)
        if as_json:
            out = {
                **_loaded_json(loaded),
                "types": type_counts(loaded.events),
                "children": shown.children,
                "warnings": list(loaded.warnings),
            }
            if events:
                out["events"] = [event.to_wire() for event in loaded.events]
            write_json_line(out)
            return
        cut = loaded.inherited_event_count
        kind = session_kind(loaded.header, loaded.events[cut:])
        render_session(loaded, kind, shown.children, with_events=events)


# --------------------------------------------------------------------------- tree


@dataclass(slots=True)
class _Node:
    summary: SessionSummary
    kind: str | None
    children: list[_Node] = field(default_factory=list)
    state: str | None = None
    """A background child's state (running, interrupted, failed, finished); else ``None``."""
    branch_turn: int | None = None
    """The parent's turn a seeded child branched after (``None``: unseeded, or top level)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.summary.header.id,
            "kind": self.kind,
            "state": self.state,
            "branchTurn": self.branch_turn,
            "inheritedEventCount": self.summary.inherited_event_count,
            "eventCount": self.summary.event_count,
            "children": [child.to_json() for child in self.children],
        }


async def _node(store: EventStore, node: TreeNode) -> _Node:
    """A tree node of the CLI: the lineage node's kind and, for a background child, its state."""
    from dsh.events.fork import branch_turn
    from dsh.store.base import SessionSummary

    loaded = node.session
    summary = SessionSummary(loaded.header, node.cut, len(loaded.events))
    state = None
    if node.kind is not None and node.descriptor is not None and node.descriptor.mode == "continuable":
        from dsh.session import open_turn
        from dsh.subagents.lifecycle import lease_held_elsewhere, logged_state  # imports the loop: 0.27 s

        own = node.own_events
        elsewhere = open_turn(own) is not None and await lease_held_elsewhere(store, node.id)
        state = logged_state(own, lease_held_elsewhere=elsewhere)
    turn = branch_turn(loaded.events, node.cut) if loaded.header.parent_session is not None else None
    out = _Node(summary, node.kind, state=state, branch_turn=turn)
    out.children = [await _node(store, child) for child in node.children]
    return out


async def _build_subtree(store: EventStore, root_id: str, seen: set[str] | None = None) -> _Node:
    """``root_id`` and its descendants, reading only those sessions (the one lineage builder,
    :class:`~dsh.session.timeline.SessionTree`)."""
    from dsh.session.timeline import SessionTree

    tree = await SessionTree.load(store, root_id, streams=False)  # kinds and states: no stream
    if seen is not None:
        seen.update(tree.nodes)
    return await _node(store, tree.root)


async def _build_forest(store: EventStore) -> list[_Node]:
    """Every root (no parent, or a parent not in the store) with its descendants. A top-level
    session with no children is its summary (nothing to label: no kind, state or branch turn),
    so only trees with children are read (10,000 lone sessions: one listing, no loads)."""
    summaries = _ordered(await store.list_sessions())
    by_id = {s.header.id: s for s in summaries}
    parents = {s.header.parent_session for s in summaries}
    roots = [s for s in summaries if s.header.parent_session not in by_id]
    alone = {s.header.id for s in roots if s.header.parent_session is None and s.header.id not in parents}
    seen: set[str] = set(alone)
    forest = [
        _Node(root, None) if root.header.id in alone else await _build_subtree(store, root.header.id, seen)
        for root in roots
    ]
    # Sessions on a parentSession cycle have no root; show each cycle once from its oldest member.
    for s in summaries:
        if s.header.id not in seen:
            forest.append(await _build_subtree(store, s.header.id, seen))
    return forest


async def _build_tree(store: EventStore, root_id: str | None) -> list[_Node]:
    """The tree under ``root_id`` (reading only it), or the whole forest."""
    from dsh.cli.resolve import resolve_id

    if root_id is not None:
        return [await _build_subtree(store, await resolve_id(store, root_id))]
    return await _build_forest(store)


def _tree_label(node: _Node) -> Text:
    from rich.text import Text

    s = node.summary
    kind = (f"{node.kind} ", "cyan") if node.kind else ""
    state = (f"  background, {node.state}", "yellow") if node.state else ""
    turn = f" at turn {node.branch_turn}" if node.branch_turn is not None else ""
    return Text.assemble(
        kind,
        (terminal_safe(s.header.id), "bold"),
        state,
        f"  branched{turn}, " if turn else "  ",
        f"cut {s.inherited_event_count}, {s.event_count} events",
    )


def _add_branches(tree: Tree, node: _Node) -> None:
    for child in node.children:
        _add_branches(tree.add(_tree_label(child)), child)


@sessions_app.command("tree")
def tree_cmd(
    session_id: Annotated[
        str | None,
        typer.Argument(
            metavar="ID",
            help="Show only this session and its descendants (default: every root).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show sessions with their children nested, each child labelled spawn or fork, with its cut.

    A background child also shows its state: running (in another process), interrupted (a
    crash left its turn open, or it was stopped), failed or finished. Without ID every root
    is shown: a session with no parent, or whose parent is not in the store. With --json:
    one node (with ID) or a list of root nodes (without), each node {id, kind, state,
    branchTurn, inheritedEventCount, eventCount, children}; kind is null for a top-level
    session, state null but for a background child, branchTurn the parent's turn a seeded
    child branched after (null otherwise).
    """
    from rich.tree import Tree

    forest = _in_store(store, lambda s: _build_tree(s, session_id))
    with user_errors():
        if as_json:
            if session_id is not None:
                write_json_line(forest[0].to_json())
            else:
                write_json_line([node.to_json() for node in forest])
            return
        console = make_console()
        if not forest:
            console.print(f"no sessions in {store_label(store)}")
            return
        from rich.text import Text

        alone: list[Text] = []  # trees of one node: their labels, printed as one text
        for node in forest:
            if not node.children:
                alone.append(_tree_label(node))
                continue
            if alone:
                console.print(Text("\n").join(alone))
                alone = []
            tree = Tree(_tree_label(node))
            _add_branches(tree, node)
            console.print(tree)
        if alone:
            console.print(Text("\n").join(alone))


# --------------------------------------------------------------------------- fork


@sessions_app.command("fork")
def fork_cmd(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The parent session to fork.", show_default=False)
    ],
    child_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            metavar="CHILD_ID",
            help="Id for the new child session (default: a fresh id).",
            show_default=False,
        ),
    ] = None,
    at: Annotated[
        int | None,
        typer.Option(
            "--at",
            metavar="TURN",
            help="Branch after this completed turn (1-based; default: the last completed turn).",
            show_default=False,
        ),
    ] = None,
    at_seq: Annotated[
        int | None,
        typer.Option(
            "--at-seq",
            metavar="N",
            help="Branch at the first turn/end at or after event seq N (never an earlier one).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fork a session at a completed turn into a new branch (its last completed turn by default).

    The child holds the parent's events through that turn's turn/end, then the
    session/end-seed marker; its inherited cut is the length of that prefix. It is a
    top-level branch: `dsh run --resume CHILD` / `dsh chat --resume CHILD` continue it. A
    turn that has not ended, a turn or seq past the end, and a session with no completed turn
    are one-line errors (with --at / --at-seq); without them a parent with no completed turn
    gives an empty, unseeded child. With --json: the child's session object.
    """

    from dsh.cli.resolve import resolve_id
    from dsh.events.fork import ended_turn

    async def body(s: EventStore) -> tuple[SessionSummary, int | None]:
        child = await s.branch(await resolve_id(s, session_id), child_id=child_id, at=at, at_seq=at_seq)
        cut = child.inherited_event_count  # the turn it branched after: the event before the cut
        last = await s.read_from(child.header.id, cut - 1) if cut else []
        return child, ended_turn(last[0]) if last else None

    child, turn = _in_store(store, body, create=True)
    with user_errors():
        if as_json:
            write_json_line(_summary_json(child))
            return
        cut = child.inherited_event_count
        if cut:
            where = f" at turn {turn}" if turn is not None else ""
            typer.echo(
                f"forked {terminal_safe(session_id)} -> {child.header.id}{where}: "
                f"cut {cut}, {child.event_count} events"
            )
        else:
            typer.echo(
                f"forked {terminal_safe(session_id)} -> {child.header.id}: the parent has no completed turn, "
                "so the child starts empty (cut 0)"
            )

"""``dsh log ID`` (and ``dsh sessions show ID --transcript``): print a session's conversation."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from dsh.cli.common import JsonOption, StoreOption, run_async, user_errors, write_json_line
from dsh.cli.tables import make_console

if TYPE_CHECKING:
    from dsh.cli.transcript_view import ViewOptions
    from dsh.replay.reuse import Reuse
    from dsh.store.base import EventStore, LoadedSession

T = TypeVar("T")

ReasoningOption = Annotated[
    bool, typer.Option("--reasoning", help="Show the model's reasoning (hidden by default).")
]
ChildrenOption = Annotated[
    bool,
    typer.Option(
        "--children", help="Nest each subagent's transcript where it was called (default: link it)."
    ),
]


OriginalsOption = Annotated[
    bool,
    typer.Option(
        "--originals",
        help="In each compaction's block, also list the messages it replaced, in full "
        "(they always print where they happened).",
    ),
]


async def load_tree(store: EventStore, raw_id: str) -> tuple[str, dict[str, LoadedSession]]:
    """The session ``raw_id`` names (a unique prefix works) and it with every descendant, loaded."""
    from dsh.cli.resolve import resolve_id
    from dsh.errors import CorruptLogError
    from dsh.store.deletion import descendants

    root = await resolve_id(store, raw_id)
    loaded: dict[str, LoadedSession] = {}
    for sid in await descendants(store, root):
        try:
            loaded[sid] = await store.load(sid)
        except CorruptLogError as exc:  # name the session, and where its log is damaged
            raise CorruptLogError(f"session {sid!r}: its log is damaged: {exc}") from exc
    return root, loaded


def markdown_of(url: str | None, raw_id: str, options: ViewOptions) -> str:
    """The Markdown transcript of the session ``raw_id`` in the store ``url``."""
    from dsh.cli.transcript_view import transcript_markdown

    return _with_tree(url, raw_id, lambda sessions, root: transcript_markdown(sessions, root, options))


def _with_tree(url: str | None, raw_id: str, render: Callable[[dict[str, LoadedSession], str], T]) -> T:
    from dsh.store.url import open_store

    async def body() -> T:
        store = open_store(url, create=False)
        try:
            root, sessions = await load_tree(store, raw_id)
            return render(sessions, root)
        finally:
            await store.close()

    return run_async(body)


def print_lines(url: str | None, raw_id: str) -> None:
    """``dsh log ID --json``: the transcript's lines (``walk_transcript(detail=True)``), one
    JSON object per line (docs/reference/json-output.md), then one ``spend`` line: the tree's
    calls, tokens and cost and each session's own (:meth:`dsh.session.spend.TreeSpend.to_json`)."""
    from dsh.session.prices import PriceTable
    from dsh.session.spend import tree_spend
    from dsh.snapshot.transcript import walk_transcript

    with user_errors():
        prices = PriceTable.load()

    def both(sessions: dict[str, LoadedSession], root: str) -> list[dict[str, Any]]:
        walk = walk_transcript(sessions, root, detail=True)  # one fold: the lines and the spend
        spend = tree_spend(sessions, root, walk.ledgers).to_json(prices)
        return [*walk.lines, {"session": root, "type": "spend", **spend}]

    lines = _with_tree(url, raw_id, both)
    with user_errors():
        for line in lines:
            write_json_line(line)


def print_transcript(url: str | None, raw_id: str, options: ViewOptions) -> None:
    """Print the transcript: rendered on a terminal, the Markdown text itself otherwise."""
    text = markdown_of(url, raw_id, options)
    with user_errors():
        if sys.stdout.isatty():
            from rich.markdown import Markdown

            make_console().print(Markdown(text, hyperlinks=False))
        else:
            sys.stdout.write(text)
            sys.stdout.flush()


CacheOption = Annotated[
    bool,
    typer.Option(
        "--cache",
        help="Instead of the conversation: each model request's prefix reuse (bytes and estimated "
        "tokens shared with the session's previous request, the provider's cache reads) and "
        "where a request rewrote its prefix.",
    ),
]


def print_cache(url: str | None, raw_id: str, as_json: bool) -> None:
    """``dsh log ID --cache``: the tree's requests' prefix reuse (``dsh.replay.prefix``)."""
    from dsh.cli.cache_report import cache_json, cache_text
    from dsh.replay.reuse import tree_reuse
    from dsh.store.url import open_store

    async def body() -> list[Reuse]:
        store = open_store(url, create=False)
        try:
            root, sessions = await load_tree(store, raw_id)
            parent = sessions[root].header.parent_session
            if parent is not None and sessions[root].inherited_event_count:  # a fork child: its cut
                sessions = {**sessions, parent: await store.load(parent)}
            return tree_reuse(sessions, root)
        finally:
            await store.close()

    reuse = run_async(body)
    with user_errors():
        if as_json:
            for line in cache_json(reuse):
                write_json_line(line)
        else:
            sys.stdout.write(cache_text(reuse))
            sys.stdout.flush()


def log_show(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session (a unique prefix works).", show_default=False)
    ],
    reasoning: ReasoningOption = False,
    children: ChildrenOption = False,
    originals: OriginalsOption = False,
    cache: CacheOption = False,
    as_json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Print a session's conversation: prompts, answers, tool calls, subagents, usage per turn.

    On a terminal the answers are rendered as Markdown; piped, the Markdown text is printed
    as is (the same as `dsh sessions export ID --format markdown`). Tool calls and results
    are cut to one line; each subagent call links its child (`dsh log CHILD`), or with
    --children shows the child's transcript nested. Same as `dsh sessions show ID --transcript`.

    Each compaction is a block where its checkpoint was logged: `── compacted turns A–B: N
    messages, X → Y tokens ──` and the summary the model continued from. The messages it
    replaced still print where they happened; --originals also lists them, in full, in the
    block. A failed compaction is one line saying the history is unchanged and why.
    With --json: the transcript's lines, one JSON object per line (a subagent's are
    spliced in where it was called), a compaction's carrying its record and its originals.
    The transcript ends with the usage and cost of the session tree (each session once).

    With --cache: for every model request of the tree, the bytes and estimated tokens it
    shares with the session's previous request (a fork child's first: the parent's request
    at the cut), the provider's cache reads, and the first region that differs — tools, the
    system prompt (section N), message N, or a compaction (expected). A request that
    rewrites its prefix is named: "the cache prefix broke at: REGION". With --json: one
    object per request, then a summary line.
    """
    from dsh.cli.transcript_view import ViewOptions

    if cache:
        print_cache(store, session_id, as_json)
        return
    if as_json:
        print_lines(store, session_id)
        return
    options = ViewOptions(reasoning=reasoning, children=children, originals=originals)
    print_transcript(store, session_id, options)

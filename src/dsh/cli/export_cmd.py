"""``dsh sessions export``: a session as a version-2 JSONL log, one JSON document, or Markdown."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dsh.cli.common import StoreOption, fail, run_async, user_errors
from dsh.cli.tables import terminal_safe
from dsh.cli.transcript_cmd import ChildrenOption, OriginalsOption, ReasoningOption, load_tree
from dsh.jsonx import dumps_unchecked

if TYPE_CHECKING:
    from dsh.store.base import LoadedSession

FORMATS = ("jsonl", "json", "markdown")


def _document(sessions: dict[str, LoadedSession], sid: str, placed: set[str] | None = None) -> dict[str, Any]:
    """``{"session", "events", "children"}``: the session object, its wire events, its children
    nested (each session once: a ``parentSession`` cycle is not followed back)."""
    from dsh.session.digest import session_json

    placed = {sid} if placed is None else placed
    loaded = sessions[sid]
    kids = sorted(
        (s for s in sessions.values() if s.header.parent_session == sid and s.header.id not in placed),
        key=lambda s: (s.header.created_at, s.header.id),
    )
    placed.update(k.header.id for k in kids)
    return {
        "session": session_json(loaded.header, loaded.inherited_event_count, len(loaded.events)),
        "events": [event.to_wire() for event in loaded.events],
        "children": [_document(sessions, k.header.id, placed) for k in kids],
    }


def export_cmd(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session (a unique prefix works).", show_default=False)
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help="jsonl (a version-2 log), json (one document with the descendants) or markdown.",
        ),
    ] = "jsonl",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write to this file (jsonl: compressed when the name ends in .zst); default: stdout.",
            show_default=False,
        ),
    ] = None,
    reasoning: ReasoningOption = False,
    children: ChildrenOption = False,
    originals: OriginalsOption = False,
    store: StoreOption = None,
) -> None:
    """Export a session as a log, a JSON document or a Markdown transcript.

    jsonl: a self-contained version-2 log (a fork child's file includes its inherited
    prefix); importing it into any store gives back every event and the cut exactly. json:
    {"session", "events", "children": [the same, nested]} — the session with every
    descendant. markdown: the transcript `dsh log ID` prints (--reasoning, --children, --originals).
    """
    if fmt not in FORMATS:
        fail(f"--format {fmt}: expected one of {', '.join(FORMATS)}", 2)
    from dsh.cli.transcript_view import ViewOptions, transcript_markdown
    from dsh.store.logfile import compress, encode_log, write_file_atomic
    from dsh.store.url import open_store

    options = ViewOptions(reasoning=reasoning, children=children, originals=originals)

    async def body() -> tuple[LoadedSession, bytes]:
        store_ = open_store(store, create=False)
        try:
            root, sessions = await load_tree(store_, session_id)
        finally:
            await store_.close()
        if fmt == "jsonl":
            data = encode_log(sessions[root])
            if output is not None and output.name.endswith(".zst"):
                data = compress(data)
        elif fmt == "json":
            data = dumps_unchecked(_document(sessions, root)) + b"\n"
        else:
            data = transcript_markdown(sessions, root, options).encode()
        if output is not None:
            await asyncio.to_thread(write_file_atomic, output, data)
        return sessions[root], data

    loaded, data = run_async(body)
    with user_errors():
        if output is None:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return
        typer.echo(
            f"exported {terminal_safe(loaded.header.id)} to {terminal_safe(os.fspath(output))} as {fmt}: "
            f"{len(loaded.events)} events, cut {loaded.inherited_event_count}"
        )

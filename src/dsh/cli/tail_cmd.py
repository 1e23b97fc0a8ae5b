"""``dsh sessions tail``: print a session's events and, with ``--follow``, new ones as they are committed.

Following uses ``LISTEN/NOTIFY`` on PostgreSQL and polls SQLite, JSONL and memory stores
(:func:`dsh.store.tail.follow`). It ends when the running turn (or, on an idle session,
the next one) ends, or on Ctrl-C (exit status 130, no traceback).
"""

from __future__ import annotations

import os
import sys
from contextlib import aclosing
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from dsh.cli.common import JsonOption, StoreOption, run_async, write_json_line
from dsh.cli.tables import terminal_safe
from dsh.jsonx import dumps_unchecked

if TYPE_CHECKING:
    from dsh.events import Event

PREVIEW_CHARS: Final = 160
EXIT_INTERRUPTED: Final = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells report it."""


def _clock(ms: int) -> str:
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def _shown_data(data: Any) -> Any:
    """``data`` with a model call's ``stream`` summarized, first (its chunks would fill the line)."""
    if isinstance(data, dict) and isinstance(data.get("stream"), dict):
        chunks = data["stream"].get("chunks")
        count = len(chunks) if isinstance(chunks, list) else "?"
        return {"stream": f"<{count} chunks>", **{k: v for k, v in data.items() if k != "stream"}}
    return data


def event_line(event: Event) -> str:
    """One line for ``event``: seq, UTC clock time, type and a compact preview of its data."""
    text = dumps_unchecked(_shown_data(event.data)).decode("utf-8", errors="replace")
    text = " ".join(text.split())
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    return f"{event.seq:>6}  {_clock(event.time)}  {terminal_safe(event.type):<18}  {terminal_safe(text)}"


def _emit(event: Event, as_json: bool) -> None:
    if as_json:
        write_json_line(event.to_wire())
    else:
        typer.echo(event_line(event))


def _silence_stdout() -> None:
    """After the reader went away (``| head``), send the rest of stdout nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def tail(
    raw_id: Annotated[
        str,
        typer.Argument(metavar="ID", help="The session to tail (a unique prefix works).", show_default=False),
    ],
    follow_: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Keep printing events as another process appends them, until the running turn "
            "(or, on an idle session, the next one) ends; Ctrl-C stops.",
        ),
    ] = False,
    from_seq: Annotated[
        int,
        typer.Option(
            "--from",
            metavar="SEQ",
            help="Start at this seq; a negative SEQ counts from the end (--from -20: the last 20 events).",
        ),
    ] = 0,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a session's events, one line each; with --follow, also new ones as they are committed.

    Each line: seq, UTC time, type and a compact preview of the data (a settlement's stream
    is summarized). With --json: one wire event object per line, exactly as stored. Only
    committed events are shown. Following uses LISTEN/NOTIFY on PostgreSQL and polls other
    stores every 150 ms.
    """
    from dsh.cli.resolve import resolve_id
    from dsh.store.tail import follow
    from dsh.store.url import open_store

    async def body() -> None:
        events_store = open_store(store, create=False)
        try:
            session_id = await resolve_id(events_store, raw_id)
            start = from_seq
            if start < 0:
                stored = await events_store.read_from(session_id, 0)
                start = max(len(stored) + start, 0)
            if not follow_:
                for event in await events_store.read_from(session_id, start):
                    _emit(event, as_json)
                return
            async with aclosing(follow(events_store, session_id, start)) as events:
                async for event in events:
                    _emit(event, as_json)
        except BrokenPipeError:
            _silence_stdout()
        finally:
            await events_store.close()

    try:
        run_async(body)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None

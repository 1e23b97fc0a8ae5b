"""Shared CLI rendering: the console, the stable JSON shape of a session, tables and formatters.

Everything a log says (ids, paths, types, previews) is untrusted: it is shown through
:func:`terminal_safe`, so an escape sequence in a recorded id cannot drive the terminal and
a newline cannot forge a table row.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO, cast

import typer

from dsh.jsonx import dumps_unchecked

if TYPE_CHECKING:  # rich and the store are imported by the commands that render, not at startup
    from rich.console import Console
    from rich.table import Table

    from dsh.events import Event
    from dsh.store.base import LoadedSession

WIDE = 240
"""Console width used when stdout is not a terminal, so ids never wrap in pipes and logs."""


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional controls: they reorder what follows on screen (``exe.gnp`` shown as ``png.exe``)."""


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def terminal_safe(text: str, *, multiline: bool = False) -> str:
    """``text`` with terminal control characters written as escapes (``\\x1b``, ``\\u202e``).

    Escaped: C0 and C1 controls and DEL (so ESC sequences, OSC titles, bells, carriage
    returns), bidirectional controls and the Unicode line/paragraph separators. ``multiline``
    keeps newlines and tabs (streamed model text); otherwise they are escaped too (ids,
    paths, one-line fields). Everything else, non-ASCII letters and emoji included, is kept.
    """
    if text.isprintable():
        return text
    out: list[str] = []
    for char in text:
        if multiline and (char == "\n" or char == "\t"):
            out.append(char)
        elif char in _BIDI or unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            code = ord(char)
            out.append(_NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"))
        else:
            out.append(char)
    return "".join(out)


class TrimmedLines:
    """Standard output (or error) without the whitespace that ends a line: Rich pads every
    table and grid cell to its column's width, which piped output must not carry. Spaces at
    the end of one write are held until the next shows whether the line goes on."""

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        self._pending = ""

    @property
    def _target(self) -> TextIO:
        return sys.stderr if self._stderr else sys.stdout  # looked up late, as Rich does

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        last = lines.pop()
        kept = last.rstrip()
        self._pending = last[len(kept) :]
        self._target.write("".join(line.rstrip() + "\n" for line in lines) + kept)
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self) -> str:
        return self._target.encoding


_ONE_CELL_MARKS = frozenset("—↳…")
"""The marks dsh adds to what it prints (no model, a child's title, a cut text): one cell each."""


def _one_cell_each(text: str) -> bool:
    return text.isascii() or all(c < "\x7f" or c in _ONE_CELL_MARKS for c in text)


def cell_width(text: str) -> int:
    """Terminal cells of a (terminal-safe) text: its length when every character is one cell
    (ASCII, dsh's own marks); else Rich's measure (``rich.cells``, imported only then)."""
    if _one_cell_each(text):
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def cut_cells(text: str, size: int) -> str:
    """``text`` cut to at most ``size`` cells, without the spaces that would end it."""
    if _one_cell_each(text):
        return text[:size].rstrip(" ")
    from rich.cells import set_cell_size

    return set_cell_size(text, size).rstrip(" ")


def piped_width() -> int | None:
    """The width of a plain listing when standard output is plainly no terminal (piped,
    redirected) and nothing asks for one (``TTY_COMPATIBLE``, ``FORCE_COLOR``, which Rich
    honours): ``$COLUMNS`` if larger, else :data:`WIDE`, as :func:`make_console` would take.
    ``None`` otherwise: Rich decides (:func:`make_console`). A piped listing then needs no
    Rich, ~30 ms of a ``sessions list -n 50`` that does ~10 ms of work."""
    if sys.stdout.isatty() or "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return None
    columns = os.environ.get("COLUMNS", "")
    return max(int(columns) if columns.isdigit() else 0, WIDE)


def make_console(*, stderr: bool = False, markup: bool = False, live: bool = False) -> Console:
    """The one way dsh makes a Rich console (stdout, or stderr): emoji and highlighting never
    apply to what it prints (recorded data is untrusted), markup only when asked for.

    On a terminal it takes the terminal's width; a ``live`` view (text streamed a chunk at a
    time) leaves wrapping to the terminal. Piped or redirected it never wraps a line (soft
    wrap), and tables and trees get room for full ids: ids, JSON and report lines stay whole
    in CI logs and for ``grep``; and no line ends in whitespace (:class:`TrimmedLines`; a
    ``live`` view's streamed text is printed as it came).
    """
    from rich.console import Console

    console = Console(stderr=stderr, markup=markup, emoji=False, highlight=False, soft_wrap=live)
    if not console.is_terminal:
        # Its size and that it is no terminal are decided once: Rich asks both at every print
        # (environment reads, a terminal-size call each), 25,000 times in a long replay's view.
        width, height = max(console.width, WIDE), console.height
        file = None if live else cast("TextIO", TrimmedLines(stderr=stderr))
        console = Console(
            stderr=stderr,
            file=file,
            markup=markup,
            emoji=False,
            highlight=False,
            soft_wrap=True,
            width=width,
            height=height,
            force_terminal=False,
        )
    return console


_FILE_REPORT = re.compile(r"<path>(?P<path>[^\n]*?)</path>\n<type>[^<\n]*</type>\n<content>\n?")
"""The head of the file tools' tagged answer (``read``, ``write``, ``read_image``: the original's
shape, :func:`dsh.tools.builtin._base.file_report`)."""


def readable_result(text: str) -> str:
    """A tool result as a person reads it — the one rule of ``dsh log`` and the live view: the
    file tools' tagged answer ``<path>P</path><type>T</type><content>BODY</content>`` becomes
    ``P``, a newline and ``BODY`` (anything after the content, a spill notice, kept); every
    other result is its text as it is."""
    head = _FILE_REPORT.match(text)
    if head is None:
        return text
    before, closed, after = text[head.end() :].rpartition("</content>")
    body = before.rstrip("\n") + after if closed else after
    return f"{head['path']}\n{body}" if body.strip() else head["path"]


def warn(message: str) -> None:
    """Print one warning line to stderr (``dsh: warning: ...``), control characters escaped."""
    typer.echo(f"dsh: warning: {terminal_safe(message)}", err=True)


def type_counts(events: Sequence[Event]) -> dict[str, int]:
    """Event type → number of events of that type, sorted by type name."""
    counts = Counter(event.type for event in events)
    return {name: counts[name] for name in sorted(counts)}


def format_time(ms: int) -> str:
    """Epoch milliseconds as a UTC timestamp (``2026-07-06 12:34:56Z``)."""
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")


def preview(data: object, limit: int = 100) -> str:
    """One-line compact JSON of ``data``, cut to ``limit`` characters (controls escaped)."""
    text = dumps_unchecked(data).decode("utf-8", errors="replace")
    text = terminal_safe(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def usage_text(usage: dict[str, int]) -> str:
    """Token usage as ``inputTokens 12, outputTokens 3`` (``no usage reported`` when empty)."""
    return terminal_safe(", ".join(f"{k} {v}" for k, v in usage.items())) or "no usage reported"


def or_dash(value: object) -> str:
    """``str(value)`` (controls escaped), or an em dash for ``None``."""
    return "—" if value is None else terminal_safe(str(value))


def types_table(counts: dict[str, int]) -> Table:
    """A two-column table: event type and count."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("type")
    table.add_column("count", justify="right")
    for name, count in counts.items():
        table.add_row(terminal_safe(name), str(count))
    return table


def key_value_grid(rows: Sequence[tuple[str, str]]) -> Table:
    """A borderless grid of bold keys and their values (controls escaped)."""
    from rich.table import Table

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for key, value in rows:
        grid.add_row(terminal_safe(key), terminal_safe(value))
    return grid


def render_session(
    loaded: LoadedSession, kind: str | None, children: Sequence[str], *, with_events: bool
) -> None:
    """Print ``dsh sessions show``: the header grid, then type counts or every event.

    Inherited events (before the cut) are dimmed on a terminal; the ``session/end-seed``
    marker row sits at the cut.
    """
    from rich.table import Table

    h = loaded.header
    cut = loaded.inherited_event_count
    rows = [
        ("session", h.id),
        ("parent", or_dash(h.parent_session)),
        ("kind", or_dash(kind)),
        ("created", format_time(h.created_at)),
        ("cwd", or_dash(h.cwd)),
        ("origin", or_dash(h.origin)),
        ("depth", str(h.delegation_depth)),
        ("preset", or_dash(h.agent_preset)),
        ("seeded", "yes" if h.is_seeded else "no"),
        ("cut", f"{cut} inherited, {len(loaded.events) - cut} own"),
        ("events", str(len(loaded.events))),
        ("children", ", ".join(map(terminal_safe, children)) if children else "—"),
    ]
    console = make_console()
    console.print(key_value_grid(rows))
    console.print()
    if not with_events:
        console.print(types_table(type_counts(loaded.events)))
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("seq", justify="right")
    table.add_column("time", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("data", overflow="ellipsis", no_wrap=True)
    for event in loaded.events:
        style = "dim" if event.seq < cut else ""
        table.add_row(
            str(event.seq),
            format_time(event.time),
            terminal_safe(event.type),
            preview(event.data),
            style=style,
        )
    console.print(table)

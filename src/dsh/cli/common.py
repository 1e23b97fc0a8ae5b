"""CLI plumbing: one-line errors, async entry, shared options and store opening."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from typer.core import TyperGroup

from dsh.cli.tables import terminal_safe
from dsh.errors import DshError, UsageError
from dsh.jsonx import dumps_unchecked

if TYPE_CHECKING:
    from dsh.store.notices import WarningSink

T = TypeVar("T")

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="DSH_STORE",
        help="Where sessions live: sqlite:PATH, jsonl:DIR, jsonl+zstd:DIR (zstd-compressed) or "
        "postgresql://... "
        "(default: the embedded SQLite database under the user data dir).",
        show_default=False,
    ),
]

ModelOption = Annotated[
    str | None,
    typer.Option("--model", help="Model id (default: $DSH_MODEL or deepseek-chat).", show_default=False),
]

BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="OpenAI-compatible endpoint (default: $DSH_BASE_URL, $DEEPSEEK_BASE_URL or DeepSeek).",
        show_default=False,
    ),
]

ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="API key (default: $DEEPSEEK_API_KEY or $DSH_API_KEY). Never logged.",
        show_default=False,
    ),
]

JsonOption = Annotated[bool, typer.Option("--json", help="Print stable JSON instead of a table.")]


class HelpGroup(TyperGroup):
    """A command group whose listing shows each command's first sentence whole (wrapped), never cut."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:  # the (vendored) click types
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def store_label(url: str | None) -> str:
    """How a store is named in messages: its URL, or the default SQLite database's path."""
    from dsh.store.url import default_sqlite_path

    return url or str(default_sqlite_path())


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one error line to stderr and exit with ``code``."""
    typer.echo(f"dsh: error: {terminal_safe(message)}", err=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn every expected failure into one line on stderr and a non-zero exit."""
    try:
        yield
    except typer.Exit:
        raise
    except UsageError as exc:
        fail(str(exc), 2)
    except DshError as exc:
        fail(str(exc))
    except FileNotFoundError as exc:
        fail(f"{exc.filename}: no such file or directory")
    except IsADirectoryError as exc:
        fail(f"{exc.filename}: is a directory")
    except PermissionError as exc:
        fail(f"{exc.filename}: permission denied")
    except OSError as exc:
        fail(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))


def stderr_warnings() -> WarningSink:
    """A store warning sink printing each distinct message once: ``dsh: warning: ...`` on stderr."""
    seen: set[str] = set()

    def sink(message: str) -> None:
        if message not in seen:
            seen.add(message)
            typer.echo(f"dsh: warning: {message}", err=True)

    return sink


def run_async(fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``fn()`` on a fresh event loop with user errors mapped to one line.

    Store warnings (a torn tail left out, a foreign file skipped) are printed on stderr,
    each once per command.
    """
    import asyncio  # here: ``dsh --help`` and ``dsh run --help`` never start a loop (~30 ms)

    from dsh.store.notices import warnings_to

    with user_errors(), warnings_to(stderr_warnings()):

        async def main() -> T:
            return await fn()

        return asyncio.run(main())


def write_json_line(obj: object) -> None:
    """Write one compact JSON line to stdout."""
    sys.stdout.buffer.write(dumps_unchecked(obj) + b"\n")
    sys.stdout.flush()

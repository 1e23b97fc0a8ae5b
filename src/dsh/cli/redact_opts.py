"""``--redact REGEX`` and ``--no-redact``: the options of every command that writes a recording."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from dsh.snapshot.redaction import RedactOptions

RedactOption = Annotated[
    list[str] | None,
    typer.Option(
        "--redact",
        metavar="REGEX",
        help="Also redact what this regex matches (a named group s: only that part); repeatable, "
        "kept in input.json so replays apply it too.",
        show_default=False,
    ),
]

NoRedactOption = Annotated[
    bool,
    typer.Option(
        "--no-redact",
        help="Debugging only: write secrets (keys, tokens, secret environment values) verbatim.",
    ),
]


def redaction(redact: list[str] | None, no_redact: bool, provider_key: str | None = None) -> RedactOptions:
    """The options as the writers take them; ``--no-redact`` is said on stderr, loudly."""
    from dsh.redact.rule import custom_shapes
    from dsh.snapshot.redaction import NO_REDACT_WARNING, RedactOptions

    custom = tuple(redact or ())
    custom_shapes(custom, "--redact")  # a bad regex: one line naming it, before any work
    if no_redact:
        typer.echo(f"dsh: WARNING: {NO_REDACT_WARNING}", err=True)
    return RedactOptions(custom, enabled=not no_redact, provider_key=provider_key)

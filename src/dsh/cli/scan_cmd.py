"""``dsh scenario scan DIR...``: secrets a recording still holds (for a pre-commit hook)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dsh.cli.common import JsonOption, fail, user_errors, write_json_line


def _custom(roots: list[Path]) -> list[str]:
    """The ``replay.redact`` regexes of every scenario's ``input.json`` among ``roots``."""
    from dsh import jsonx
    from dsh.replay.layout import INPUT

    out: list[str] = []
    for root in roots:
        for found in [root / INPUT] if root.is_dir() else []:
            if not found.is_file():
                continue
            try:
                document = jsonx.loads(found.read_bytes())
            except jsonx.JSONDecodeError as exc:
                fail(f"{found}: not valid JSON ({exc})", 2)
            replay = document.get("replay") if isinstance(document, dict) else None
            listed = replay.get("redact", []) if isinstance(replay, dict) else []
            if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
                fail(f'{found}: "replay.redact" must be a list of regex strings', 2)
            out.extend(listed)
    return out


def scan_cmd(
    paths: Annotated[
        list[Path], typer.Argument(metavar="DIR...", help="Scenario directories or files to scan.")
    ],
    as_json: JsonOption = False,
) -> None:
    """List secrets a recording still holds: FILE:LINE: KIND for each, never the value.

    Looks for the redaction rule's token shapes (provider keys, GitHub, AWS, Slack and
    Google tokens, JWTs, private keys, bearer tokens, URL passwords), the values of this
    environment's KEY/TOKEN/SECRET/PASSWORD variables and the scenario's own replay.redact
    regexes. Exit 1 when anything is found, 0 when clean: fit for a pre-commit hook.
    """
    from dsh.redact.scan import scan

    for path in paths:
        if not path.exists():
            fail(f"{path}: no such file or directory", 2)
    with user_errors():
        hits = scan(paths, custom=_custom(paths))
        if as_json:
            write_json_line(
                {
                    "clean": not hits,
                    "findings": [{"file": str(h.path), "line": h.line, "kind": h.kind} for h in hits],
                }
            )
        else:
            for hit in hits:
                typer.echo(str(hit))
            typer.echo(f"{len(hits)} unredacted secret(s)" if hits else "no unredacted secrets", err=True)
    raise typer.Exit(1 if hits else 0)

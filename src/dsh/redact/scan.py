"""``dsh scenario scan``: the secrets a recording still holds, by file and line.

Every text file below the given directories (a file with a NUL byte in its first 8 KiB is
binary and skipped) is read line by line through the redaction rule — the token shapes,
the current environment's secret values and the scenario's own ``replay.redact`` regexes —
and each match is one :class:`Hit` (file, line, kind). A line holding a logged settlement
is also matched on the text each run of its streamed deltas makes
(:func:`dsh.redact.streams.split_texts`), so a secret split across two deltas — which no
line holds whole — is a hit too. The secret itself is never kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.redact.rule import Finding, Redactor, secret_values
from dsh.redact.streams import split_texts

BINARY_PROBE = 8192


@dataclass(frozen=True, slots=True)
class Hit:
    """One unredacted secret: where it is and what kind, never its value."""

    path: Path
    line: int
    kind: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}"


def files_below(roots: Iterable[Path]) -> Iterator[Path]:
    """Every regular file of ``roots`` (a file itself, or a directory walked in name order)."""
    for root in roots:
        if root.is_file():
            yield root
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                yield path


def _is_text(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"\0" not in handle.read(BINARY_PROBE)


def _split(line: str, redactor: Redactor) -> Iterator[Finding]:
    """The secrets of a line's streams that no single delta holds whole (a line that is not a
    JSON object, or holds no stream, has none)."""
    if not line.startswith("{") or "delta" not in line:
        return
    try:
        record: Any = jsonx.loads(line)
    except ValueError:
        return
    for pieces in split_texts(record):
        cuts = list(accumulate(len(p) for p in pieces))[:-1]
        for found in redactor.findings("".join(pieces)):
            if any(found.start < cut < found.end for cut in cuts):
                yield found


def scan_file(path: Path, redactor: Redactor) -> list[Hit]:
    """The hits of one file (an unreadable or binary file has none)."""
    if not _is_text(path):
        return []
    hits: list[Hit] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            hits.extend(Hit(path, number, f.kind) for f in redactor.findings(line))
            hits.extend(Hit(path, number, f.kind) for f in _split(line, redactor))
    return hits


def scan(
    roots: Iterable[Path], *, custom: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> list[Hit]:
    """Every unredacted secret below ``roots``."""
    redactor = Redactor("scan", values=secret_values(environ), custom=tuple(custom))
    return [hit for path in files_below(roots) for hit in scan_file(path, redactor)]

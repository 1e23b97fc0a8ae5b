"""``dsh scenario scan``: the secrets a recording still holds, by file and line.

Every text file below the given directories (a file with a NUL byte in its first 8 KiB is
binary and skipped) is read line by line through the redaction rule — the token shapes,
the current environment's secret values and the scenario's own ``replay.redact`` regexes —
and each match is one :class:`Hit` (file, line, kind). The secret itself is never kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from dsh.redact.rule import Redactor, secret_values

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


def scan_file(path: Path, redactor: Redactor) -> list[Hit]:
    """The hits of one file (an unreadable or binary file has none)."""
    if not _is_text(path):
        return []
    hits: list[Hit] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            hits.extend(Hit(path, number, f.kind) for f in redactor.findings(line))
    return hits


def scan(
    roots: Iterable[Path], *, custom: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> list[Hit]:
    """Every unredacted secret below ``roots``."""
    redactor = Redactor("scan", values=secret_values(environ), custom=tuple(custom))
    return [hit for path in files_below(roots) for hit in scan_file(path, redactor)]

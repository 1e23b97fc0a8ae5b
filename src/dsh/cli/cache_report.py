"""How prefix reuse reads (``dsh log --cache``, ``dsh replay --cache``): a table per session
and a verdict line, or JSON lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh.cli.tables import terminal_safe
from dsh.replay.reuse import Reuse

HEADERS = ("call", "turn.step", "bytes", "shared", "~tokens", "cache read", "against", "break")


def _cells(r: Reuse) -> tuple[str, ...]:
    where = f"{r.turn}.{r.step}" if r.turn is not None else "-"
    broke = "—" if r.broke is None else ("expected: " if r.broke.expected else "⚠ ") + r.broke.text()
    read = "—" if r.cache_read is None else f"{r.cache_read:,}"
    return (str(r.call), where, f"{r.size:,}", f"{r.shared:,}", f"{r.estimate:,}", read, r.against, broke)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def verdict(reuse: Sequence[Reuse]) -> list[str]:
    """One line per request that rewrote its prefix, else one saying none did."""
    flagged = [r for r in reuse if r.flagged]
    if not flagged:
        sessions = len({r.session for r in reuse})
        counts = f"{_count(len(reuse), 'request')}, {_count(sessions, 'session')}"
        return [f"no break: every request extends the one before it ({counts})"]
    return [f"session {r.session}: {r.line()}" for r in flagged]


def cache_text(reuse: Sequence[Reuse]) -> str:
    lines: list[str] = []
    for session in dict.fromkeys(r.session for r in reuse):
        rows = [("", HEADERS), *((" ", _cells(r)) for r in reuse if r.session == session)]
        widths = [max(len(cells[i]) for _, cells in rows) for i in range(len(HEADERS))]
        lines.append(f"session {session}")
        for _, cells in rows:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
        lines.append("")
    lines += verdict(reuse)
    return terminal_safe("\n".join(lines), multiline=True) + "\n"


def cache_json(reuse: Sequence[Reuse]) -> list[dict[str, Any]]:
    """One ``{"type": "request", ...}`` per request, then ``{"type": "cache", "breaks": [...]}``."""
    out: list[dict[str, Any]] = [{"type": "request", **r.to_json()} for r in reuse]
    breaks = [{"session": r.session, "call": r.call, "line": r.line()} for r in reuse if r.flagged]
    out.append({"type": "cache", "requests": len(reuse), "breaks": breaks})
    return out

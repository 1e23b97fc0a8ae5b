"""Ages as people type and read them: ``30d``, ``12h``, ``2026-11-30``; ``5m ago``."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from dsh.errors import UsageError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"(\d+)\s*([smhdw])")


def parse_age(text: str, option: str) -> int:
    """``30d``, ``12h``, ``90m``, ``45s`` or ``2w`` as milliseconds (``UsageError`` naming ``option``)."""
    match = _AGE.fullmatch(text.strip().lower())
    if match is None:
        raise UsageError(f"{option} {text!r}: expected a number and a unit (s, m, h, d or w), e.g. 30d")
    return int(match[1]) * _UNITS[match[2]] * 1000


def parse_since(text: str, option: str, now_ms: int) -> int:
    """An age (``2d``: that long before ``now_ms``) or a UTC date/time (``2026-11-30[T12:00]``) in ms."""
    if _AGE.fullmatch(text.strip().lower()):
        return now_ms - parse_age(text, option)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{option} {text!r}: expected an age such as 2d or a date such as 2026-11-30"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def ago(ms: int | None, now_ms: int) -> str:
    """How long before ``now_ms`` the moment ``ms`` was: ``now``, ``40s ago``, ``5m ago``, ``3d ago``."""
    if ms is None:
        return "—"
    seconds = max(now_ms - ms, 0) // 1000
    if seconds < 5:
        return "now"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"

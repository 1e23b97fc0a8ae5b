"""Session ids as people type them: unique prefixes (as git does) and "the latest session here".

Every command that takes a session id resolves it here first: a stored id is itself; else
the one stored id that starts with it; no match is ``SessionNotFoundError``; several
matches are one line listing the candidates (a ``UsageError``, exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.cli.tables import terminal_safe
from dsh.errors import CorruptLogError, SessionNotFoundError, UsageError
from dsh.ids import check_session_id
from dsh.store.base import EventStore, ReportsDamage
from dsh.store.prefix import ids_with_prefix

SHOWN_CANDIDATES = 5
"""An ambiguous prefix names at most this many candidates."""

SHORT_ID = 8
"""The shortest id prefix a table shows."""


async def resolve_id(store: EventStore, text: str) -> str:
    """The stored session id ``text`` names: itself, or the only id it is a prefix of.

    No match raises the store's own ``SessionNotFoundError`` (naming the store as it does).
    """
    if not text:
        raise UsageError("a session id must not be empty")
    check_session_id(text)
    matches = await ids_with_prefix(store, text)
    if matches == [text]:
        return text
    if not matches:
        damage = await store.damaged_log(text) if isinstance(store, ReportsDamage) else None
        if damage is not None:  # the listing skipped it: say so, not "not found"
            raise CorruptLogError(f"session {terminal_safe(text)!r}: its log is damaged: {damage}")
        await store.load(text)  # raises the store's SessionNotFoundError
        raise SessionNotFoundError(text)  # pragma: no cover - created meanwhile
    if len(matches) > 1:
        shown = ", ".join(terminal_safe(m) for m in matches[:SHOWN_CANDIDATES])
        more = f" and {len(matches) - SHOWN_CANDIDATES} more" if len(matches) > SHOWN_CANDIDATES else ""
        raise UsageError(f"session id prefix {terminal_safe(text)!r} is ambiguous: it matches {shown}{more}")
    return matches[0]


async def resolve_ids(store: EventStore, texts: Sequence[str]) -> list[str]:
    """Each of ``texts`` resolved, duplicates dropped, in the order given."""
    out: list[str] = []
    for text in texts:
        sid = await resolve_id(store, text)
        if sid not in out:
            out.append(sid)
    return out


def short_ids(ids: Sequence[str]) -> dict[str, str]:
    """Each id → its shortest prefix of at least :data:`SHORT_ID` characters unique among ``ids``."""
    ordered = sorted(set(ids))
    need = [SHORT_ID] * len(ordered)
    for i in range(1, len(ordered)):  # sorted: an id shares its longest prefix with a neighbour
        a, b = ordered[i - 1], ordered[i]
        if a[:SHORT_ID] != b[:SHORT_ID]:
            continue
        common, end = SHORT_ID, min(len(a), len(b))
        while common < end and a[common] == b[common]:
            common += 1
        need[i - 1] = max(need[i - 1], common + 1)
        need[i] = max(need[i], common + 1)
    return {sid: sid[:n] for sid, n in zip(ordered, need, strict=True)}

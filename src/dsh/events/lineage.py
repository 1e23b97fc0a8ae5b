"""Walking ``parentSession`` links safely: every walk keeps a visited set, so a cycle ends it.

A store written by dsh holds no cycle (``create`` refuses a session naming itself as its
parent, ``create_batch`` — every import — refuses a batch that closes a cycle), but a store
may already hold one (written by an older dsh, or by hand), and headers are untrusted
input: every lineage walk goes through these functions and visits each session once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

ParentOf = Callable[[str], "str | None"]
"""A session id → its ``parentSession`` (``None``: top-level or not known)."""


def parent_cycle(session_id: str, parent_of: ParentOf) -> list[str] | None:
    """The cycle ``session_id`` is on (``[id, parent, ..., id]``), or ``None`` when its
    ancestry ends (a top-level session, an unknown parent, or a cycle it is not on)."""
    path = [session_id]
    seen = {session_id}
    current = parent_of(session_id)
    while current is not None:
        path.append(current)
        if current == session_id:
            return path
        if current in seen:
            return None
        seen.add(current)
        current = parent_of(current)
    return None


def ancestors(session_id: str, parent_of: ParentOf) -> list[str]:
    """``session_id``'s parent, grandparent, ... (nearest first), stopping before a repeat."""
    out: list[str] = []
    seen = {session_id}
    current = parent_of(session_id)
    while current is not None and current not in seen:
        out.append(current)
        seen.add(current)
        current = parent_of(current)
    return out


def below(root: str, children_of: Callable[[str], Iterable[str]]) -> list[str]:
    """``root`` and every session under it, breadth first, each once (``root`` first)."""
    order = [root]
    seen = {root}
    i = 0
    while i < len(order):
        for child in children_of(order[i]):
            if child not in seen:
                seen.add(child)
                order.append(child)
        i += 1
    return order

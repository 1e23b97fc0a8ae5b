"""Delegation's one home: who may start a child (depth, background), how deep it sits, and
the ``subagent/descriptor`` it logs — for the in-process tools and ``dsh.temporal`` alike.

``child_depth`` itself lives in :mod:`dsh.events.header` (the loop and the recorder below
this layer use it too); it is re-exported here."""

from __future__ import annotations

from typing import Any

from dsh.events.descriptor import SubagentDescriptor
from dsh.events.header import child_depth
from dsh.events.vocabulary import SUBAGENT_DESCRIPTOR

__all__ = ["BACKGROUND_DISABLED", "child_depth", "depth_below", "descriptor_event", "parent_depth", "refusal"]

BACKGROUND_DISABLED = "run_in_background is disabled for this tool instance (enableRunInBackground: false)"


def parent_depth(depth: int) -> int:
    """The delegation depth of the parent of a child at ``depth``."""
    return depth - 1


def depth_below(depth: int, caller_depth: int) -> int:
    """How far below a caller at ``caller_depth`` a descendant at ``depth`` sits (a child: 1)."""
    return depth - caller_depth


def refusal(*, background: bool, background_allowed: bool, parent_depth: int, max_depth: int) -> str | None:
    """Why a delegation call may not start its child (the call's error text), else ``None``."""
    if background and not background_allowed:
        return BACKGROUND_DISABLED
    depth = child_depth(parent_depth)
    if depth > max_depth:
        return f"subagent depth {depth} exceeds maxDepth {max_depth}"
    return None


def descriptor_event(
    *, continuable: bool, mode: str, label: str, parent_session: str, call_id: str
) -> tuple[str, dict[str, Any]]:
    """The child's ``subagent/descriptor`` event (type, data): ``continuable`` for a background
    child (its first own event), else ``one-shot`` (its first turn's preamble)."""
    kind = "continuable" if continuable else "one-shot"
    descriptor = SubagentDescriptor(kind, mode, label, parent_session, call_id)
    return SUBAGENT_DESCRIPTOR, descriptor.to_wire()

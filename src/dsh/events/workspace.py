"""``workspace/checkpoint`` and ``workspace/rewind``: the typed payloads and their one reader.

A session run by ``dsh run`` / ``chat`` / ``acp`` logs, after each ``turn/end``, the
content-addressed manifest of its workspace (``dsh.workspace``) as an ignorable
``workspace/checkpoint {turn, manifest, files, skipped}``. ``dsh rewind`` logs, as the
branch's own event, ``workspace/rewind {source, turn, restored, replaced, undo}``:
``restored`` the manifest it wrote back (``None``: conversation only), ``replaced`` the
checkpoint of what it overwrote (what undoing restores).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from dsh.events.envelope import Event
from dsh.events.vocabulary import WORKSPACE_CHECKPOINT, WORKSPACE_REWIND


class WorkspaceCheckpointData(TypedDict):
    """``workspace/checkpoint``: the turn it follows, its manifest's blob id, counts."""

    turn: int
    manifest: str
    files: int
    skipped: int


class WorkspaceRewindData(TypedDict):
    """``workspace/rewind``: what a rewind (or its undo) did to the workspace."""

    source: str
    turn: int | None
    restored: str | None
    replaced: str | None
    undo: bool


def checkpoint_at(events: Sequence[Event], turn: int) -> str | None:
    """The manifest id of the last ``workspace/checkpoint`` logged for ``turn`` (``None``: none)."""
    found = None
    for e in events:
        if e.type == WORKSPACE_CHECKPOINT and isinstance(e.data, dict) and e.data.get("turn") == turn:
            manifest = e.data.get("manifest")
            found = manifest if isinstance(manifest, str) else found
    return found


@dataclass(frozen=True, slots=True)
class Rewind:
    """A logged rewind, read back."""

    seq: int
    source: str | None
    turn: int | None
    restored: str | None
    replaced: str | None
    undo: bool


def last_rewind(events: Sequence[Event]) -> Rewind | None:
    """The last ``workspace/rewind`` of a log (``None``: none)."""
    for e in reversed(events):
        if e.type == WORKSPACE_REWIND and isinstance(e.data, dict):
            d = e.data

            def text(key: str, d: dict[str, object] = d) -> str | None:
                value = d.get(key)
                return value if isinstance(value, str) else None

            turn = d.get("turn")
            number = turn if type(turn) is int else None
            undo = d.get("undo") is True
            return Rewind(e.seq, text("source"), number, text("restored"), text("replaced"), undo)
    return None

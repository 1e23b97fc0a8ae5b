"""Rewind = a branch at a turn + the workspace as it was then (and undoing that).

:func:`rewind_session` makes the user's branch at turn N (``store.branch``; with
``files_only`` at the last completed turn: the conversation goes on, the files go back),
checkpoints the workspace as it is (what the rewind replaces), writes back the files of the
turn's ``workspace/checkpoint`` and logs ``workspace/rewind`` as the branch's first own event.
:func:`undo_rewind` restores what the branch's last rewind replaced (itself checkpointed
first, so an undo can be undone). The original session is never written. ``confirm`` is
asked before any file is overwritten or deleted (``None``: no asking).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from dsh.errors import UsageError
from dsh.events import Event
from dsh.events.fork import branch_turn
from dsh.events.vocabulary import WORKSPACE_REWIND
from dsh.events.workspace import WorkspaceRewindData, checkpoint_at, last_rewind
from dsh.ids import now_ms
from dsh.loop.workspace_checkpoints import StoreBlobs
from dsh.store import EventStore
from dsh.workspace import Checkpointer, RestorePlan, apply_restore, plan_restore
from dsh.workspace.snapshot import load_manifest

Confirm = Callable[[RestorePlan], Awaitable[bool]]
"""Asked before files are overwritten or deleted: go on?"""


@dataclass(frozen=True, slots=True)
class Rewound:
    """What a rewind did: the branch (``None``: an undo, logged in the session undone),
    the files written and deleted, and the checkpoint of what they replaced."""

    session: str
    plan: RestorePlan
    restored: str | None
    replaced: str | None


class RewindRefusedError(UsageError):
    """The user said no before anything was changed."""


async def _restore(
    store: EventStore, root: Path, manifest_id: str, confirm: Confirm | None
) -> tuple[RestorePlan, Callable[[], Awaitable[str]]]:
    """The plan, confirmed; and the step that checkpoints what it replaces, then applies it."""
    blobs = StoreBlobs(store)
    manifest = await load_manifest(blobs, manifest_id)
    plan = await plan_restore(root, manifest)
    if not plan.empty and confirm is not None and not await confirm(plan):
        raise RewindRefusedError("nothing rewound")

    async def run() -> str:
        replaced, _ = await Checkpointer(root, blobs).take()
        await apply_restore(root, manifest, plan, blobs)
        return replaced

    return plan, run


async def _checkpoint(store: EventStore, session_id: str, turn: int) -> str | None:
    """The manifest of ``turn``'s checkpoint: in the session's log, else — for a turn at or
    before its cut (a branch's inherited turns: the checkpoint after the cut's ``turn/end`` is
    its parent's) — in its parent's, up the lineage."""
    seen: set[str] = set()
    while session_id not in seen:
        seen.add(session_id)
        loaded = await store.load(session_id)
        found = checkpoint_at(loaded.events, turn)
        branched = branch_turn(loaded.events, loaded.inherited_event_count)
        parent = loaded.header.parent_session
        if found is not None or parent is None or branched is None or turn > branched:
            return found
        session_id = parent
    return None


async def _log(store: EventStore, session_id: str, data: WorkspaceRewindData) -> None:
    seq = len(await store.read_from(session_id, 0))
    await store.append(session_id, [Event(WORKSPACE_REWIND, seq, now_ms(), data, ignorable=True)])


async def rewind_session(
    store: EventStore,
    session_id: str,
    to: int,
    *,
    root: Path,
    files: bool = True,
    conversation: bool = True,
    confirm: Confirm | None = None,
    child_id: str | None = None,
) -> Rewound:
    """Branch ``session_id`` at turn ``to`` and restore ``root`` as that turn left it."""
    if not files and not conversation:
        raise UsageError("rewind: --conversation-only and --files-only exclude each other")
    manifest_id = await _checkpoint(store, session_id, to) if files else None
    if files and manifest_id is None:
        raise UsageError(
            f"session {session_id} has no workspace checkpoint at turn {to} (dsh run, chat and acp take one "
            "after each turn); use --conversation-only"
        )
    plan, restore = RestorePlan(), None
    if manifest_id is not None:
        plan, restore = await _restore(store, root, manifest_id, confirm)
    branch = await store.branch(session_id, child_id=child_id, at=to if conversation else None)
    replaced = await restore() if restore is not None else None
    data: WorkspaceRewindData = {
        "source": session_id,
        "turn": to,
        "restored": manifest_id,
        "replaced": replaced,
        "undo": False,
    }
    await _log(store, branch.header.id, data)
    return Rewound(branch.header.id, plan, manifest_id, replaced)


async def undo_rewind(
    store: EventStore, session_id: str, *, root: Path, confirm: Confirm | None = None
) -> Rewound:
    """Put back the files the last rewind logged in ``session_id`` replaced; logged there too."""
    found = last_rewind((await store.load(session_id)).events)
    if found is None or found.replaced is None:
        raise UsageError(f"session {session_id} has no rewind of files to undo")
    plan, restore = await _restore(store, root, found.replaced, confirm)
    replaced = await restore()
    data: WorkspaceRewindData = {
        "source": session_id,
        "turn": found.turn,
        "restored": found.replaced,
        "replaced": replaced,
        "undo": True,
    }
    await _log(store, session_id, data)
    return Rewound(session_id, plan, found.replaced, replaced)

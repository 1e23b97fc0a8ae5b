"""Workspace checkpoints at each completed turn (``dsh run``, ``chat``, ``acp`` turn them on).

:class:`StoreBlobs` keeps a checkpoint's bytes as the store's attachments (content-addressed,
stored once); :class:`TurnCheckpoints` takes one after every turn and logs it as the
ignorable ``workspace/checkpoint {turn, manifest, files, skipped}`` right after ``turn/end``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from dsh.events import Event
from dsh.events.attachments import Attachment
from dsh.events.vocabulary import TURN_END, WORKSPACE_CHECKPOINT
from dsh.events.workspace import WorkspaceCheckpointData
from dsh.ids import now_ms
from dsh.loop.state import FedState
from dsh.store import EventStore
from dsh.store.base import HasLocalFiles
from dsh.workspace import Checkpointer, Limits


class StoreBlobs:
    """:class:`dsh.workspace.Blobs` over a store's attachments."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def put(self, data: bytes, media_type: str) -> str:
        return await self.store.put_attachment(Attachment(media_type, data))

    async def get(self, blob_id: str) -> bytes | None:
        found = await self.store.get_attachment(blob_id)
        return None if found is None else found.data


def log_ignorable(agent: FedState, etype: str, data: object) -> None:
    """Append an ignorable event to the agent's session and publish it."""
    event = Event(etype, agent.session.next_seq, now_ms(), data, ignorable=True)
    agent.feed.event(agent.session.id, agent.session.append_event(event))


class TurnCheckpoints:
    """Checkpoints ``root`` after each turn of an agent, incrementally."""

    def __init__(self, root: Path, store: EventStore, limits: Limits | None = None) -> None:
        limits = limits or Limits()
        if isinstance(store, HasLocalFiles):  # a store inside the workspace is not its content
            own = frozenset(str(p.absolute()) for p in store.local_files())
            limits = dataclasses.replace(limits, leave_out=limits.leave_out | own)
        self.checkpointer = Checkpointer(root, StoreBlobs(store), limits)

    async def after_turn(self, agent: FedState) -> None:
        """Checkpoint the workspace and log it after the turn that just ended (durably)."""
        events = agent.session.events
        last = events[-1] if events else None
        if last is None or last.type != TURN_END or not isinstance(last.data.get("turn"), int):
            return
        manifest_id, manifest = await self.checkpointer.take()
        data: WorkspaceCheckpointData = {
            "turn": last.data["turn"],
            "manifest": manifest_id,
            "files": len(manifest.files),
            "skipped": len(manifest.skipped),
        }
        log_ignorable(agent, WORKSPACE_CHECKPOINT, data)
        await agent.checkpoint()

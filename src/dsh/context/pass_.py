"""One session's workspace-context messages at each pre-step: instructions, then the catalog."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dsh.context.catalog import catalog_message, digest, entries, visible_catalog
from dsh.context.config import WorkspaceConfig
from dsh.context.instructions import InstructionTracker, shadowed_seqs
from dsh.context.skills import discover
from dsh.events import Event
from dsh.events.messages import Message


class WorkspacePass:
    """The instruction tracker and the skill catalog of one session (``config`` per agent)."""

    def __init__(self, config: WorkspaceConfig, cwd: Path) -> None:
        self.config = config
        self._cwd = cwd
        instructions = config.instructions
        self._instructions = (
            InstructionTracker(config, instructions, cwd)
            if instructions is not None and instructions.enabled
            else None
        )

    def instructions(self, events: Sequence[Event]) -> Message | None:
        """The instruction message this pre-step appends right after its claimed messages."""
        return self._instructions.step(events) if self._instructions is not None else None

    def catalog(self, events: Sequence[Event]) -> Message | None:
        """The skill catalog when it differs from the one on the surface (after the runtime context)."""
        if not self.config.skills:
            return None
        items = entries(discover(self._cwd, self.config))
        shown = visible_catalog(events, shadowed_seqs(events))
        if shown is None:
            return catalog_message(items, update=False) if items else None
        if digest(shown) == digest(items):
            return None
        return catalog_message(items, update=True)

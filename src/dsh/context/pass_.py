"""One session's workspace-context messages at each pre-step: instructions, then the catalog."""

from __future__ import annotations

from pathlib import Path

from dsh.context.catalog import catalog_message, digest, entries, visible_catalog
from dsh.context.config import WorkspaceConfig
from dsh.context.instructions import InstructionTracker, shadowed_seqs
from dsh.context.skills import discover
from dsh.events.messages import Message
from dsh.session import Session


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
        self._shadowed: tuple[int, set[int]] | None = None

    def _hidden(self, session: Session) -> set[int]:
        """:func:`shadowed_seqs` of ``session``, found once per pre-step (the instructions and
        the catalog of one pre-step see the same log)."""
        if self._shadowed is None or self._shadowed[0] != session.next_seq:
            self._shadowed = (session.next_seq, shadowed_seqs(session))
        return self._shadowed[1]

    def instructions(self, session: Session) -> Message | None:
        """The instruction message this pre-step appends right after its claimed messages."""
        if self._instructions is None:
            return None
        return self._instructions.step(session, self._hidden(session))

    def catalog(self, session: Session) -> Message | None:
        """The skill catalog when it differs from the one on the surface (after the runtime context)."""
        if not self.config.skills:
            return None
        items = entries(discover(self._cwd, self.config))
        shown = visible_catalog(session, self._hidden(session))
        if shown is None:
            return catalog_message(items, update=False) if items else None
        if digest(shown) == digest(items):
            return None
        return catalog_message(items, update=True)

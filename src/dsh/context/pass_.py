"""One session's workspace-context messages at each pre-step: instructions, then the catalog."""

from __future__ import annotations

from pathlib import Path

from dsh.context.catalog import ShownCatalog, catalog_message, digest, entries
from dsh.context.config import WorkspaceConfig
from dsh.context.folds import FoldMark
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
        self._shown = ShownCatalog()
        self._scanned = FoldMark()
        self._shadowed: set[int] = set()

    def _hidden(self, session: Session) -> set[int]:
        """:func:`shadowed_seqs` of ``session``: what the replaces appended since the last
        pre-step shadowed is added (the instructions and the catalog of one pre-step see the
        same log; the set only grows, a log being append-only)."""
        since = self._scanned.since(session)
        if since == 0:
            self._shadowed = set()
        if since < session.next_seq:
            self._shadowed |= shadowed_seqs(session, since)
            self._scanned.reached(session)
        return self._shadowed

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
        shown = self._shown(session, self._hidden(session))
        if shown is None:
            return catalog_message(items, update=False) if items else None
        if digest(shown) == digest(items):
            return None
        return catalog_message(items, update=True)

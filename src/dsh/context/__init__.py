"""Workspace context: AGENTS.md / CLAUDE.md instructions, skills, session titles, session reads.

What the original tells a model about its workspace besides the runtime context, with the
original's texts: :mod:`~dsh.context.instructions` (the instruction passes),
:mod:`~dsh.context.skills` and :mod:`~dsh.context.catalog` (discovery, the catalog message,
the ``skill`` tool's text), :mod:`~dsh.context.titles` (the fallback title) and
:mod:`~dsh.context.event_read` (``session_event_read``). Imports ``dsh.tools``,
``dsh.events`` and below.
"""

from dsh.context.config import InstructionsConfig, WorkspaceConfig
from dsh.context.pass_ import WorkspacePass

__all__ = ["InstructionsConfig", "WorkspaceConfig", "WorkspacePass"]

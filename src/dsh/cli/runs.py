"""A run as people name it: a stored session (a unique id prefix) or a scenario directory.

``dsh export otel`` and ``dsh diff`` read either; both get the session with every
descendant, keyed by id, and the root's id.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh.store import LoadedSession
    from dsh.store.base import EventStore

Tree = tuple[str, dict[str, "LoadedSession"]]


def is_scenario_dir(text: str) -> bool:
    """Whether ``text`` names a directory holding a ``session.jsonl`` (a scenario or recording)."""
    from dsh.replay.layout import PRIMARY

    path = Path(text)
    return path.is_dir() and (path / PRIMARY).is_file()


def scenario_tree(directory: Path) -> Tree:
    """A scenario directory's recorded sessions (the primary and its ``session.N.jsonl``)."""
    from dsh.errors import ScenarioError
    from dsh.replay.files import read_recorded

    logs = read_recorded(directory)
    if logs.primary is None:
        raise ScenarioError(f"{directory}: no session.jsonl")
    sessions = {logs.primary.header.id: logs.primary}
    sessions.update((child.header.id, child) for _, child in logs.children)
    return logs.primary.header.id, sessions


async def load_run(store: EventStore | None, text: str) -> Tree:
    """The run ``text`` names: a scenario directory if it is one, else a session of ``store``."""
    if is_scenario_dir(text):
        return scenario_tree(Path(text))
    if store is None:
        from dsh.errors import UsageError

        raise UsageError(f"{text}: not a scenario directory, and no store to look the id up in")
    from dsh.cli.transcript_cmd import load_tree

    return await load_tree(store, text)

"""The original's snapshot fixtures: harness behaviour its replays of its recordings rely on.

The original replays each recording under its snapshot configuration, which loads fixtures
beside the agent; its scenarios wait on what they do. A replay of one of the original's
recordings (version-0 logs) provides the ones its default snapshot configuration loads —
as behaviour of the replay harness, never of the agent (nothing here is model-visible):

- the subagent-settlement marker: whenever a child session ends a turn (a one-shot run
  settled, a continuable child's activation ended), an empty ``.dsh-snapshot-subagent-settled``
  is written in the workspace (``waitForFile`` waits on it).

The ``hang`` entry's ``readyFile`` (``dsh.replay.entries``) is the replay model's own. Our
recordings were made without these fixtures, so their replays do not provide them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from dsh.events import Event
from dsh.events.vocabulary import TURN_END

SETTLED_MARKER: Final = ".dsh-snapshot-subagent-settled"


class SnapshotFixtures:
    """The fixtures of the original's default snapshot configuration, for one replay in ``cwd``."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    def child_event(self, event: Event) -> None:
        """A child session appended ``event``: a turn's end settles it (the marker)."""
        if event.type == TURN_END:
            (self.cwd / SETTLED_MARKER).write_bytes(b"")

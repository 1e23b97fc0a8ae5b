"""Session ids a model asks new sessions to take: a replay's live sessions take their recorded ids.

A model replaying a recording (``dsh.replay.ReplayModel``) implements :class:`SessionIds`:
a new session — top-level (``parent_session=None``) or a child started by ``call_id`` —
takes the id of the recorded session it will be bound to, so prompts and tool arguments that
name recorded ids (the original's ``33333333-…`` placeholders) mean the same session live.
An id already taken in the target store is not reused: the session gets a fresh id (the
comparison normalizes ids either way) and the model is told, so it can say so once
(``dsh.loop.session_ids.recorded_session_id`` is the one place that asks).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class SessionIds(Protocol):
    """A model that names the ids its new sessions should take."""

    def session_id_for(self, parent_session: str | None, call_id: str | None) -> str | None:
        """The id a new session should take (``None``: a fresh one), claimed for it."""
        ...

    def id_taken(self, session_id: str) -> None:
        """The claimed ``session_id`` is already in the target store: a fresh id is used."""
        ...

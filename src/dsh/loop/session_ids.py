"""The id a new session takes when its model names one (``dsh.model.SessionIds``: a replay)."""

from __future__ import annotations

from dsh.model import SessionIds
from dsh.store import EventStore


async def recorded_session_id(
    model: object, store: EventStore, parent_session: str | None, call_id: str | None
) -> str | None:
    """The id the model asks a new session to take, unless ``store`` already holds it (then
    the model is told and the session gets a fresh id: ``None``)."""
    if not isinstance(model, SessionIds):
        return None
    wanted = model.session_id_for(parent_session, call_id)
    if wanted is None:
        return None
    if await store.exists(wanted):
        model.id_taken(wanted)
        return None
    return wanted

"""The logical session header and the inherited-cut rules shared by every codec."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from dsh.errors import InvalidEventError
from dsh.events.envelope import Event
from dsh.events.sparse import SparseLog
from dsh.events.vocabulary import SESSION_END_SEED

FORMAT_VERSION = 2
"""The log format version dsh writes."""

LEGACY_VERSION = 0
"""The original's format version, read but never written."""


def child_depth(parent_depth: int) -> int:
    """The delegation depth of a child of a session at ``parent_depth`` (top level: 0)."""
    return parent_depth + 1


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """Logical header fields of a session (snake_case here, camelCase on the wire)."""

    id: str
    created_at: int
    cwd: str | None = None
    parent_session: str | None = None
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None
    is_seeded: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InvalidEventError("session header: 'id' must be a non-empty string")
        if type(self.created_at) is not int or self.created_at < 0:
            raise InvalidEventError(f"session {self.id}: 'createdAt' must be a non-negative int")
        if type(self.delegation_depth) is not int or self.delegation_depth < 0:
            raise InvalidEventError(f"session {self.id}: 'delegationDepth' must be >= 0")
        if self.origin is not None and self.origin != "subagent":
            raise InvalidEventError(f"session {self.id}: 'origin' must be \"subagent\"")

    @property
    def is_subagent(self) -> bool:
        """Whether an agent started this session as its subagent (``origin: "subagent"``).

        The one rule for "top level": a session with no parent, or a branch a user made
        (``dsh sessions fork``, ``dsh rewind``, ``store.fork``), which ``dsh run --resume`` continues.
        """
        return self.origin == "subagent"

    @property
    def subagent_parent(self) -> str | None:
        """``parentSession`` of a subagent; ``None`` for a top-level session or a user's branch."""
        return self.parent_session if self.is_subagent else None

    def to_wire(self) -> dict[str, Any]:
        """Logical header as a camelCase dict (absent optionals omitted)."""
        out: dict[str, Any] = {"id": self.id, "createdAt": self.created_at}
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        out["isSeeded"] = self.is_seeded
        if self.origin is not None:
            out["origin"] = self.origin
        out["delegationDepth"] = self.delegation_depth
        if self.agent_preset is not None:
            out["agentPreset"] = self.agent_preset
        return out

    def evolve(self, **changes: Any) -> SessionHeader:
        """Return a copy with ``changes`` applied."""
        return replace(self, **changes)


def _opt_str(raw: dict[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidEventError(f"{where}: header '{key}' must be a string")
    return value


def header_from_wire(raw: dict[str, Any], where: str, *, is_seeded: bool | None = None) -> SessionHeader:
    """Decode the camelCase header fields; ``is_seeded`` overrides the wire value (v0)."""
    seeded = raw.get("isSeeded") if is_seeded is None else is_seeded
    if not isinstance(seeded, bool):
        raise InvalidEventError(f"{where}: header 'isSeeded' must be true or false")
    depth = raw.get("delegationDepth", 0)
    created = raw.get("createdAt")
    sid = raw.get("id")
    if not isinstance(sid, str):
        raise InvalidEventError(f"{where}: header 'id' must be a string")
    if type(created) is not int:
        raise InvalidEventError(f"{where}: header 'createdAt' must be an integer")
    if type(depth) is not int:
        raise InvalidEventError(f"{where}: header 'delegationDepth' must be an integer")
    cwd = _opt_str(raw, "cwd", where)
    return SessionHeader(
        id=sid,
        created_at=created,
        cwd=cwd,
        parent_session=_opt_str(raw, "parentSession", where),
        origin=_opt_str(raw, "origin", where),
        delegation_depth=depth,
        agent_preset=_opt_str(raw, "agentPreset", where),
        is_seeded=seeded,
    )


def is_cut_marker(event: Event) -> bool:
    """True for the tagged marker ``session/end-seed {"inherited": true}``."""
    return (
        event.type == SESSION_END_SEED
        and isinstance(event.data, dict)
        and event.data.get("inherited") is True
    )


def decode_cut(is_seeded: bool, events: Sequence[Event], where: str) -> int:
    """Return the inherited cut: the seq of the last tagged marker (0 when unseeded).

    ``isSeeded: true`` without a tagged marker, or ``false`` with one, is a corrupt log.
    ``events``: the log, or any sub-sequence of it in log order that holds all its
    ``session/end-seed`` events (a caller with an index by type passes just those).
    """
    cut = None
    for event in reversed(events):
        if event.type == SESSION_END_SEED and is_cut_marker(event):  # the type first: a long log
            cut = event.seq
            break
    if is_seeded and cut is None:
        raise InvalidEventError(f"{where}: header says isSeeded but no session/end-seed marker")
    if not is_seeded and cut is not None:
        raise InvalidEventError(f"{where}: session/end-seed marker at seq {cut} but header says not seeded")
    return cut or 0


def check_cut(
    header: SessionHeader,
    inherited_event_count: int,
    events: Sequence[Event],
    markers: Sequence[Event] | None = None,
) -> None:
    """Refuse a (header, cut, events) triple that breaks the inherited-cut rules. ``markers``:
    the log's ``session/end-seed`` events in order, when the caller has them at hand (else
    the log is walked for them)."""
    where = f"session {header.id}"
    if markers is None and isinstance(events, SparseLog):  # a marker is never in a run of chunks
        markers = [e for e in events.outside_runs() if e.type == SESSION_END_SEED]
    if inherited_event_count < 0 or inherited_event_count > len(events):
        raise InvalidEventError(f"{where}: cut {inherited_event_count} is outside the log")
    found = decode_cut(header.is_seeded, events if markers is None else markers, where)
    if found != inherited_event_count:
        raise InvalidEventError(
            f"{where}: explicit cut {inherited_event_count} does not match the marker at {found}"
        )


def check_contiguous(events: Sequence[Event], where: str, start: int = 0) -> None:
    """Refuse events whose seqs are not exactly ``start, start+1, ...``."""
    for i, event in enumerate(events):
        if event.seq != start + i:
            raise InvalidEventError(f"{where}: expected seq {start + i}, found {event.seq}")

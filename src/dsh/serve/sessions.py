"""Recorded sessions as a replay serves them: :class:`ServedSession` (a session's script, its
check and how far it is consumed), :func:`load_sessions` (a directory's logs, each with its
dialect) and :func:`own_fields` (the dialect's own checked request fields)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.errors import ScenarioError
from dsh.events.payloads import header_dialect
from dsh.replay.derive import Derived, derive
from dsh.replay.fidelity import SessionCheck, Tolerances
from dsh.replay.files import read_recorded, read_tolerances
from dsh.replay.layout import PRIMARY
from dsh.replay.wire_request import wire_derived
from dsh.serve.calls import RecordedReply, recorded_replies
from dsh.serve.dialects import Dialect, Parsed, by_name
from dsh.serve.recorder import CLIENT_EVENT
from dsh.store import LoadedSession


@dataclass(slots=True)
class ServedSession:
    """One recorded session and how far the replay has consumed it."""

    label: str
    recorded_id: str
    client_key: str | None
    derived: Derived
    replies: list[RecordedReply]
    check: SessionCheck
    dialect: Dialect
    served: int = 0
    divergences: list[dict[str, Any]] = field(default_factory=list)
    last: Parsed | None = None
    """The last request this session answered, as read (the next read reuses its equal part)."""

    @property
    def calls(self) -> int:
        return len(self.derived.entries)

    def names(self) -> set[str]:
        names = {self.label, self.recorded_id, self.label.removesuffix(".jsonl")}
        if self.client_key:
            names.add(self.client_key)
        return names

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.label,
            "recordedId": self.recorded_id,
            "clientKey": self.client_key,
            "dialect": self.dialect.name,
            "calls": self.calls,
            "served": self.served,
            "divergences": self.divergences,
        }


def client_key(events: Sequence[Any]) -> str | None:
    for event in events[:4]:
        if event.type == CLIENT_EVENT and isinstance(event.data, dict):
            key = event.data.get("session")
            return str(key) if key is not None else None
    return None


def load_sessions(directory: Path, tolerances: Tolerances | None = None) -> list[ServedSession]:
    """Every recorded session of ``directory`` (primary first), ready to serve."""
    if not directory.is_dir():
        raise ScenarioError(f"dsh serve replay: {directory} is not a directory")
    recorded = read_recorded(directory)
    if recorded.primary is None:
        raise ScenarioError(f"dsh serve replay: {directory / PRIMARY} is missing (record first)")
    rules = tolerances if tolerances is not None else read_tolerances(directory)
    logs: list[tuple[str, LoadedSession]] = [(PRIMARY, recorded.primary), *recorded.children]
    out = []
    for label, loaded in logs:
        cut = loaded.inherited_event_count
        where = f"{directory.name}/{label}"
        raw = derive(loaded.events[cut:], where, inherited=loaded.events[:cut])
        noted = next((d for c in raw.calls if (d := header_dialect(c.header)) is not None), None)
        dialect = by_name(noted)
        # Chat Completions recordings are seen through its wire (what it cannot carry is lost on
        # both sides); the other dialects logged their requests as read, so both sides already match.
        wired = wire_derived(raw) if noted is None else raw
        version = recorded.versions.get(label, 2)
        check = SessionCheck(label, loaded.header.id, wired, version=version, tolerances=rules, cwd=None)
        replies = recorded_replies(loaded.events[cut:], len(wired.entries))
        out.append(
            ServedSession(label, loaded.header.id, client_key(loaded.events), wired, replies, check, dialect)
        )
    return out


def own_fields(session: ServedSession, k: int, parsed: Parsed) -> tuple[str, str, str] | None:
    """What differs in the dialect's own request fields at call ``k``: (what, recorded, live)."""
    wire = session.replies[k].wire
    if wire is None:
        return None
    if bool(wire.get("streamed")) != parsed.streamed and int(wire.get("status", 200)) == 200:
        said = ("streamed", "not streamed")
        return ("stream", said[not wire.get("streamed")], said[not parsed.streamed])
    recorded = wire.get("request") or {}
    for name in sorted(set(recorded) | set(parsed.checked)):
        if recorded.get(name) != parsed.checked.get(name):
            return (
                name,
                jsonx.dumps_sorted(recorded.get(name)),
                jsonx.dumps_sorted(parsed.checked.get(name)),
            )
    return None

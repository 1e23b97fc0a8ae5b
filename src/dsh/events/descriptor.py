"""``subagent/descriptor``: the typed payload, its one parser, and the one ``child_kind`` rule.

A subagent child's first turn logs ``subagent/descriptor {mode, provider, label,
delegation: {parentSession, callId}}`` right after ``turn/start``; ``provider`` is ``spawn`` or
``fork``. Every reader (the CLI's tree, the scenario transcript, replay's script binding, ACP,
the viewer, ``Agent.stream``) goes through :func:`find_descriptor` and :func:`child_kind`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from dsh.events.envelope import Event
from dsh.events.header import SessionHeader
from dsh.events.vocabulary import SUBAGENT_DESCRIPTOR

ChildKind = Literal["spawn", "fork"]

DEFAULT_KIND: Final = "spawn"
"""The kind of a child whose descriptor names none; readers get it through :func:`kind_or_default`."""


def kind_or_default(kind: str | None) -> str:
    """A child's kind as its readers name it: ``kind`` (a provider, a :data:`ChildKind`) when
    it has one, else :data:`DEFAULT_KIND` — the one place that default is applied."""
    return kind if kind else DEFAULT_KIND


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class SubagentDescriptor:
    """Who started a child and how: ``None`` for a field the event does not carry as a string."""

    mode: str | None
    provider: str | None
    label: str | None
    parent_session: str | None
    call_id: str | None

    @property
    def kind(self) -> ChildKind | None:
        """``spawn`` or ``fork`` when ``provider`` is one of them."""
        if self.provider == "spawn":
            return "spawn"
        if self.provider == "fork":
            return "fork"
        return None

    @property
    def provider_kind(self) -> str:
        """The ``provider`` with the default applied (:func:`kind_or_default`)."""
        return kind_or_default(self.provider)

    def to_wire(self) -> dict[str, Any]:
        """The event's ``data`` in the original's key order (fields that are ``None`` left out)."""
        out: dict[str, Any] = {}
        for key, value in (("mode", self.mode), ("provider", self.provider), ("label", self.label)):
            if value is not None:
                out[key] = value
        delegation: dict[str, str] = {}
        if self.parent_session is not None:
            delegation["parentSession"] = self.parent_session
        if self.call_id is not None:
            delegation["callId"] = self.call_id
        if delegation:
            out["delegation"] = delegation
        return out

    @classmethod
    def from_data(cls, data: object) -> SubagentDescriptor | None:
        """The descriptor in an event's ``data`` (``None`` when it is not an object)."""
        if not isinstance(data, dict):
            return None
        delegation = data.get("delegation")
        if not isinstance(delegation, dict):
            delegation = {}
        return cls(
            _str(data.get("mode")),
            _str(data.get("provider")),
            _str(data.get("label")),
            _str(delegation.get("parentSession")),
            _str(delegation.get("callId")),
        )


def parse_descriptor(event: Event) -> SubagentDescriptor | None:
    """The descriptor of a ``subagent/descriptor`` event; ``None`` for any other event."""
    if event.type != SUBAGENT_DESCRIPTOR:
        return None
    return SubagentDescriptor.from_data(event.data)


def find_descriptor(own_events: Iterable[Event]) -> SubagentDescriptor | None:
    """The first descriptor among a session's own events (after its cut), if any."""
    for event in own_events:
        if event.type == SUBAGENT_DESCRIPTOR:
            return SubagentDescriptor.from_data(event.data)
    return None


def child_kind(header: SessionHeader, own_events: Iterable[Event]) -> ChildKind | None:
    """How a child came to be: ``spawn`` or ``fork``; ``None`` for a top-level session.

    The ``provider`` of the child's own descriptor decides when it is ``spawn`` or ``fork``;
    otherwise a seeded child is a fork, a child that is not a subagent's (``dsh sessions
    fork``, ``store.fork``) is a fork even when its parent had no completed turn, and an
    unseeded subagent child is a spawn.
    """
    return descriptor_kind(header, find_descriptor(own_events))


def descriptor_kind(header: SessionHeader, descriptor: SubagentDescriptor | None) -> ChildKind | None:
    """:func:`child_kind` for a reader that already found the session's own descriptor."""
    if header.parent_session is None:
        return None
    kind = descriptor.kind if descriptor is not None else None
    if kind is not None:
        return kind
    if header.is_seeded or header.origin != "subagent":
        return "fork"
    return "spawn"

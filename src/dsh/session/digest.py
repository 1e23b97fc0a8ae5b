"""What a session's events say beyond its header: title, first prompt, model, status, kind.

A view of the timeline fold (:mod:`dsh.session.timeline`), shared by ``dsh sessions list``
and the viewer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsh.events import Event, SessionHeader
from dsh.events.descriptor import descriptor_kind
from dsh.events.messages import joined_text
from dsh.events.vocabulary import USER_MESSAGE
from dsh.session.bill import Bill

if TYPE_CHECKING:  # the fold is imported by what derives: reading a kept digest needs none of it
    from dsh.session.timeline.state import SessionState, Status

__all__ = [
    "Derived",
    "derive",
    "digest_from_json",
    "digest_json",
    "digest_of",
    "is_prompt",
    "shorten",
    "text_of",
]

TITLE_LIMIT = 80


def shorten(text: str, limit: int = TITLE_LIMIT) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def is_prompt(event: Event) -> bool:
    """Whether ``event`` is a prompt a person typed (a ``user/message`` from the user)."""
    return (
        event.type == USER_MESSAGE
        and isinstance(event.data, dict)
        and isinstance(event.data.get("source"), dict)
        and event.data["source"].get("kind") == "user"
    )


def text_of(data: Mapping[str, Any]) -> str:
    """The joined text blocks of a message's ``content`` ("" when it has none)."""
    content = data.get("content")
    return joined_text(content) if isinstance(content, list) else ""


@dataclass(frozen=True, slots=True)
class Derived:
    """What one session's events say beyond its header."""

    title: str
    first_prompt: str
    model: str | None
    last_activity: int | None
    status: Status
    kind: str | None
    label: str | None
    call_id: str | None
    compactions: int = 0
    """Own compactions that replaced a span of the history (``SessionState.compactions``)."""
    branch_turn: int | None = None
    """A fork child's: the parent's turn it branched after (``SessionState.branch_turn``)."""
    bill: Bill = field(default_factory=Bill, compare=False)
    """Own model calls' usage by route and minute (``SessionState.ledger`` as it is priced:
    ``dsh.session.bill``; summed per tree by ``dsh.session.spend``)."""


SETTLED: frozenset[str] = frozenset({"completed", "error", "empty"})
"""Statuses no clock changes (no turn is open; ``interrupted`` may be an open turn grown old,
``running`` one still young): a digest with one of them can be kept."""

_FIELDS = (
    "title",
    "first_prompt",
    "model",
    "last_activity",
    "status",
    "kind",
    "label",
    "call_id",
    "compactions",
    "branch_turn",
)
_KEYS = frozenset({*_FIELDS, "bill"})
"""The keys of a kept digest, exactly."""


def digest_json(d: Derived) -> dict[str, Any] | None:
    """``d`` as a JSON object to keep (``None``: its status depends on the clock, do not keep it)."""
    if d.status not in SETTLED:
        return None
    return {**{name: getattr(d, name) for name in _FIELDS}, "bill": d.bill.to_wire()}


def digest_from_json(obj: object) -> Derived | None:
    """A kept digest back (``None``: not one this version wrote; derive it again). A listing
    reads one per session (10,000 at a time): the checks are written out, not generated."""
    if type(obj) is not dict or obj.keys() != _KEYS or obj["status"] not in SETTLED:
        return None
    title, prompt, last = obj["title"], obj["first_prompt"], obj["last_activity"]
    count, branched = obj["compactions"], obj["branch_turn"]
    if type(title) is not str or type(prompt) is not str or type(count) is not int:
        return None
    if not (last is None or type(last) is int) or not (branched is None or type(branched) is int):
        return None
    model, kind, label, call_id = obj["model"], obj["kind"], obj["label"], obj["call_id"]
    for optional in (model, kind, label, call_id):
        if optional is not None and type(optional) is not str:
            return None
    bill = Bill.from_wire(obj["bill"])
    if bill is None:
        return None
    return Derived(title, prompt, model, last, obj["status"], kind, label, call_id, count, branched, bill)


def digest_of(header: SessionHeader, state: SessionState, *, now_ms: int | None = None) -> Derived:
    """The digest of a session a :class:`~dsh.session.timeline.Timeline` has folded."""
    prompt = state.prompt
    descriptor = state.descriptor
    return Derived(
        title=shorten(state.title) if state.title else (shorten(prompt) if prompt else header.id),
        first_prompt=prompt,
        model=state.model,
        last_activity=state.last_time,
        status=state.status(now_ms),
        kind=descriptor_kind(header, descriptor),
        label=descriptor.label if descriptor is not None else None,
        call_id=descriptor.call_id if descriptor is not None else None,
        compactions=state.compactions,
        branch_turn=state.branch_turn,
        bill=Bill.of(state.ledger),
    )


def derive(header: SessionHeader, events: Sequence[Event], cut: int, *, now_ms: int | None = None) -> Derived:
    """Title, first prompt, model, last activity, status and kind of one session: a view of
    the timeline fold of its events."""
    from dsh.session.timeline import Timeline

    timeline = Timeline()
    timeline.begin(header.id, cut=cut, header=header)
    for event in events:
        timeline.feed(header.id, event)
    return digest_of(header, timeline.state(header.id), now_ms=now_ms)


def session_json(header: SessionHeader, inherited_event_count: int, event_count: int) -> dict[str, Any]:
    """The stable JSON shape of one stored session (every key always present).

    ``id``, ``parentSession``, ``isSeeded``, ``inheritedEventCount``, ``eventCount``,
    ``createdAt``, ``cwd``, ``origin``, ``delegationDepth``, ``agentPreset``; absent
    optional header fields are ``null``.
    """
    return {
        "id": header.id,
        "parentSession": header.parent_session,
        "isSeeded": header.is_seeded,
        "inheritedEventCount": inherited_event_count,
        "eventCount": event_count,
        "createdAt": header.created_at,
        "cwd": header.cwd,
        "origin": header.origin,
        "delegationDepth": header.delegation_depth,
        "agentPreset": header.agent_preset,
    }

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


def digest_json(d: Derived) -> dict[str, Any] | None:
    """``d`` as a JSON object to keep (``None``: its status depends on the clock, do not keep it)."""
    if d.status not in SETTLED:
        return None
    return {**{name: getattr(d, name) for name in _FIELDS}, "bill": d.bill.to_wire()}


def digest_from_json(obj: object) -> Derived | None:
    """A kept digest back (``None``: not one this version wrote; derive it again)."""
    if not isinstance(obj, dict) or set(obj) != {*_FIELDS, "bill"} or obj["status"] not in SETTLED:
        return None
    bill = Bill.from_wire(obj["bill"])
    if bill is None:
        return None
    strings = ("title", "first_prompt")
    optional = ("model", "kind", "label", "call_id")
    if not all(isinstance(obj[k], str) for k in strings) or not all(
        obj[k] is None or isinstance(obj[k], str) for k in optional
    ):
        return None
    last, count, branched = obj["last_activity"], obj["compactions"], obj["branch_turn"]
    if not all(v is None or type(v) is int for v in (last, branched)) or type(count) is not int:
        return None
    return Derived(**{name: obj[name] for name in _FIELDS}, bill=bill)


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

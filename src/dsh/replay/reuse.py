"""Prefix reuse per request: each request of a session against the one before it.

For each own request of a session (:func:`session_reuse`), compared with the session's
previous request — a fork child's first: its parent's last request before the cut
(:func:`request_at`) — the shared bytes, their estimated tokens, the provider's
``cacheReadTokens`` beside them and the first region that differs
(:func:`dsh.replay.prefix.compare`). A compaction's summary request and a turn that failed
before asking are not steps of the chain. :func:`tree_reuse` walks a session tree;
:func:`reuse_drops` compares two recordings of the same run request by request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dsh.events import Event
from dsh.events.payloads import usage_of
from dsh.events.vocabulary import ASSISTANT_ATTEMPT, ASSISTANT_CHUNK, ASSISTANT_MESSAGE
from dsh.replay.derive import RecordedCall, derive
from dsh.replay.prefix import Break, Request, Wire, compare
from dsh.session.timeline.tree import Loaded, SessionTree

SETTLED = (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT)


@dataclass(frozen=True, slots=True)
class Reuse:
    """One request's prefix reuse."""

    session: str
    call: int
    """1-based, among the session's own requests (a compaction's summary request excluded)."""
    turn: int | None
    step: int | None
    size: int
    shared: int
    """Bytes shared with the previous request (0 for a session's first, unless a fork child)."""
    cache_read: int | None
    against: str
    """``the previous request``, ``the parent's request at the cut`` or ``nothing`` (a first request)."""
    broke: Break | None

    @property
    def flagged(self) -> bool:
        """The request rewrote the prefix it should extend (a compaction is not flagged)."""
        return self.broke is not None and not self.broke.expected

    estimate: int = 0
    """Estimated tokens of the shared bytes."""

    def to_json(self) -> dict[str, object]:
        return {
            "session": self.session,
            "call": self.call,
            "turn": self.turn,
            "step": self.step,
            "bytes": self.size,
            "sharedBytes": self.shared,
            "sharedTokens": self.estimate,
            "cacheReadTokens": self.cache_read,
            "against": self.against,
            "brokeAt": self.broke.text() if self.broke is not None else None,
            "expected": self.broke.expected if self.broke is not None else None,
            "flagged": self.flagged,
        }

    def line(self) -> str:
        """``the cache prefix broke at: tools (reordered: b, a) — call 2 (turn 1 step 2) shares
        40 of 1,200 bytes with the previous request``."""
        where = f" (turn {self.turn} step {self.step})" if self.turn is not None else ""
        broke = self.broke.text() if self.broke is not None else "—"
        return (
            (
                f"the cache prefix broke at: {broke} — call {self.call}{where} shares "
                f"{self.shared:,} of {self.size:,} bytes with the {self.against}"
            )
            .replace("the previous request", "previous request")
            .replace("with the previous", "with the previous")
        )


def _cache_reads(events: Sequence[Event]) -> list[int | None]:
    """The ``cacheReadTokens`` of each settlement with a stream, in log order (calls' order)."""
    out: list[int | None] = []
    for event in events:
        if event.type in (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT) and isinstance(
            event.data.get("stream"), dict
        ):
            value = (usage_of(event) or {}).get("cacheReadTokens")
            out.append(value if type(value) is int else None)
    return out


def _is_summary(call: RecordedCall) -> bool:
    return call.turn is None and call.step is None and call.checked


def session_reuse(
    session: str, events: Sequence[Event], cut: int, parent_at_cut: Request | None = None
) -> list[Reuse]:
    """Each own request of a session (``events``, inherited prefix included, ``cut`` its
    length) against the one before it; the first against ``parent_at_cut`` when given."""
    own = events[cut:]
    derived = derive(own, session, strict=False, inherited=events[:cut])
    wire = Wire(derived)
    reads = _cache_reads(own) if not any(e.type == ASSISTANT_CHUNK for e in own) else []
    out: list[Reuse] = []
    previous: RecordedCall | None = None
    n = settled = 0
    for call in derived.calls:
        if not call.checked:
            continue
        if _is_summary(call):
            continue
        n += 1
        read = reads[settled] if settled < len(reads) else None
        settled += 1
        request: Request | None = None
        if previous is None and parent_at_cut is None:
            shared, broke, against = 0, None, "nothing"
        elif previous is None:
            assert parent_at_cut is not None
            request = wire.request(call)
            shared, broke = compare(parent_at_cut, request)
            against = "the parent's request at the cut"
        elif _extends(previous, call):  # the same head, the same history grown: no compare
            shared, broke, against = wire.size(previous), None, "the previous request"
        else:  # built part by part only here: a request's parts cost its whole history
            request = wire.request(call)
            shared, broke = compare(wire.request(previous), request)
            against = "the previous request"
        estimate = 0
        if shared and request is not None:
            estimate = request.shared_tokens(shared)
        elif shared:  # all of the previous request's parts: their estimates
            assert previous is not None
            estimate = wire.tokens(previous)
        out.append(
            Reuse(session, n, call.turn, call.step, wire.size(call), shared, read, against, broke, estimate)
        )
        previous = call
    return out


def _extends(before: RecordedCall, after: RecordedCall) -> bool:
    """Whether ``after`` is ``before`` with more history: the same header and surface (its
    history indexes then start with ``before``'s: the same encoded bytes)."""
    same_head = after.header is before.header or after.header == before.header
    return same_head and after.surface == before.surface and after.history >= before.history


def request_at(events: Sequence[Event], cut: int, at: int, session: str) -> Request | None:
    """The last request a session (``events``, its own ``cut``) made before its event ``at``:
    the parent's request at a fork child's cut (``None``: it made none)."""
    if at <= cut:
        return None
    derived = derive(events[cut:at], session, strict=False, inherited=events[:cut])
    calls = [c for c in derived.calls if c.checked and not _is_summary(c)]
    return Wire(derived).request(calls[-1]) if calls else None


def tree_reuse(sessions: Mapping[str, Loaded], root: str) -> list[Reuse]:
    """Every request of ``root`` and its loaded descendants (parents first), each session's
    first request against its parent's request at the cut when it is a fork child."""
    order = [node.id for node in SessionTree.of(sessions, root).walk()] if root in sessions else []
    out: list[Reuse] = []
    for sid in order:
        loaded = sessions[sid]
        cut = loaded.inherited_event_count
        parent = sessions.get(loaded.header.parent_session or "")
        at_cut = None
        if parent is not None and cut > 0:
            at_cut = request_at(parent.events, parent.inherited_event_count, cut, parent.header.id)
        out += session_reuse(sid, loaded.events, cut, at_cut)
    return out


def _labels(reuse: Sequence[Reuse]) -> dict[str, str]:
    """Each session's place in its tree by first appearance: ``the root session``, ``child N``."""
    order = list(dict.fromkeys(r.session for r in reuse))
    return {sid: "the root session" if i == 0 else f"child {i}" for i, sid in enumerate(order)}


def reuse_drops(before: Sequence[Reuse], after: Sequence[Reuse]) -> list[str]:
    """The requests of ``after`` (a new recording) that rewrite their prefix where the same
    request of ``before`` (the committed one: same place in the tree, same call number) did
    not — one line each, naming the request, the region and the shared bytes before → after."""
    names_b, names_a = _labels(before), _labels(after)
    old = {(names_b[r.session], r.call): r for r in before}
    out: list[str] = []
    for r in after:
        place = names_a[r.session]
        was = old.get((place, r.call))
        if not r.flagged or (was is not None and was.flagged and was.broke == r.broke):
            continue
        shared = f"{was.shared:,} → {r.shared:,}" if was is not None else f"— → {r.shared:,}"
        out.append(f"{r.line()} ({place}): shared bytes {shared}")
    return out

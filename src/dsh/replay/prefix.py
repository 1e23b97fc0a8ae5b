"""Prefix reuse: how much of each model request repeats the session's previous request.

A provider's prompt cache reuses the longest prefix a request shares with one it saw. A
request is read in the order a provider renders it — the tool schemas, the system prompt,
then the history, message by message — each part as the bytes the wire carries
(:mod:`dsh.model.openai_wire`, the mapping replay rebuilds every request with). For each
request of a session (:func:`session_reuse`), compared with the session's previous request
(a fork child's first: the parent's request at the cut), it gives the shared bytes, their
estimated tokens (:func:`dsh.events.tokens.text_tokens`), the provider's ``cacheReadTokens``
beside them, and the first region that differs: ``tools`` (a tool added, removed, reordered
or its schema changed), ``the system prompt`` (its section *n*), ``message i`` (1-based, in
history order) or ``a compaction`` — the one break that is expected (a compaction rebuilds
the history; its summary request is not a step of the chain).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dsh import jsonx
from dsh.events import Event
from dsh.events.compaction import is_checkpoint_message
from dsh.events.messages import Message, joined_text
from dsh.events.payloads import RequestHeader, usage_of
from dsh.events.tokens import text_tokens
from dsh.events.vocabulary import ASSISTANT_ATTEMPT, ASSISTANT_CHUNK, ASSISTANT_MESSAGE
from dsh.model.openai_wire import wire_messages, wire_tools
from dsh.replay.derive import Derived, RecordedCall, derive
from dsh.session.timeline.tree import Loaded

SNIPPET = 40
SETTLED = (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT)


@dataclass(frozen=True, slots=True)
class Part:
    """One region of a request as the wire carries it."""

    region: str
    """``tools``, ``the system prompt`` or ``message i``."""
    data: bytes
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Request:
    """A request as its regions, in the order a provider renders it."""

    tools: tuple[tuple[str, bytes], ...]
    """Each tool's name and schema bytes, in the order sent."""
    system: bytes
    sections: tuple[str, ...]
    """The system prompt's sections (split at blank lines), to name the one that changed."""
    messages: tuple[bytes, ...]
    roles: tuple[str, ...]
    texts: tuple[str, ...]
    checkpoints: tuple[bool, ...] = ()
    """Per message: whether it is a compaction's checkpoint."""
    tokens: tuple[int, ...] = ()
    """Estimated tokens per part (tools, system, each message), in :meth:`parts` order."""
    checkpoint_ids: frozenset[tuple[int, int]] = frozenset()
    """The checkpoints it holds as (derivation, message index): the same summary text
    written twice is still two compactions."""

    def parts(self) -> list[Part]:
        out = [Part("tools", b"".join(b for _, b in self.tools))]
        out.append(Part("the system prompt", self.system))
        out += [Part(f"message {i + 1}", m) for i, m in enumerate(self.messages)]
        return out

    @property
    def size(self) -> int:
        return len(self.system) + sum(len(b) for _, b in self.tools) + sum(map(len, self.messages))

    def shared_tokens(self, shared: int) -> int:
        """Estimated tokens of the first ``shared`` bytes: whole parts at their estimate, the
        part cut inside by its shared bytes."""
        sizes = [sum(len(b) for _, b in self.tools), len(self.system), *map(len, self.messages)]
        total = 0
        for i, (size, tokens) in enumerate(zip(sizes, self.tokens, strict=False)):
            if shared >= size:
                total, shared = total + tokens, shared - size
                continue
            if shared:
                total += text_tokens(self.parts()[i].data[:shared].decode("utf-8", "ignore"))
            break
        return total


def _common(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # the longest equal prefix, by bisection on slices (C speed)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _tools_detail(before: Request, after: Request) -> str:
    names_a = [n for n, _ in before.tools]
    names_b = [n for n, _ in after.tools]
    if names_a != names_b and sorted(names_a) == sorted(names_b):
        return "reordered: " + ", ".join(names_b)
    added = [n for n in names_b if n not in names_a]
    removed = [n for n in names_a if n not in names_b]
    if added or removed:
        return "; ".join(
            part
            for part in (
                f"added {', '.join(added)}" if added else "",
                f"removed {', '.join(removed)}" if removed else "",
            )
            if part
        )
    old = dict(before.tools)
    changed = [n for n, b in after.tools if old.get(n) != b]
    return f"the schema of {', '.join(changed)}" if changed else ""


def _system_detail(before: Request, after: Request) -> str:
    for i, (a, b) in enumerate(zip(before.sections, after.sections, strict=False)):
        if a != b:
            return f"section {i + 1}: {_snippet(b)!r}"
    if len(before.sections) != len(after.sections):
        return f"{len(before.sections)} → {len(after.sections)} sections"
    return ""


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1] + "…"


@dataclass(frozen=True, slots=True)
class Break:
    """Where a request stops extending the one before it."""

    region: str
    detail: str = ""
    expected: bool = False
    """A compaction: the history was rebuilt on purpose."""

    def text(self) -> str:
        return f"{self.region} ({self.detail})" if self.detail else self.region


def _new_checkpoint(before: Request, after: Request) -> bool:
    """Whether ``after`` holds a compaction checkpoint ``before`` did not (a compaction between):
    by message index within one session's derivation, else (a fork child against its
    parent) by the checkpoint's bytes."""
    if {d for d, _ in before.checkpoint_ids} <= {d for d, _ in after.checkpoint_ids}:
        return bool(after.checkpoint_ids - before.checkpoint_ids)
    seen = {m for m, c in zip(before.messages, before.checkpoints, strict=False) if c}
    return any(c and m not in seen for m, c in zip(after.messages, after.checkpoints, strict=False))


def compare(before: Request, after: Request) -> tuple[int, Break | None]:
    """Shared bytes of ``after`` with ``before``, and where it stops extending it (``None``:
    every region of ``before`` is repeated unchanged at the start of ``after``). A break in
    a request that brings a new compaction checkpoint is the compaction's (expected): it
    rebuilt the history, and may change the tools with it (the recall tools join)."""
    shared, broke = _first_break(before, after)
    if broke is not None and _new_checkpoint(before, after):
        return shared, Break("a compaction", f"from {broke.text()}", expected=True)
    return shared, broke


def _first_break(before: Request, after: Request) -> tuple[int, Break | None]:
    shared = 0
    old, new = before.parts(), after.parts()
    for i, part in enumerate(old):
        if i >= len(new):
            return shared, Break(part.region, "no longer sent")
        if new[i].data == part.data:
            shared += len(part.data)
            continue
        shared += _common(part.data, new[i].data)
        region = part.region
        if region == "tools":
            return shared, Break("tools", _tools_detail(before, after))
        if region == "the system prompt":
            return shared, Break(region, _system_detail(before, after))
        k = i - 2
        return shared, Break(region, f"{after.roles[k]}: {_snippet(after.texts[k])!r}")
    return shared, None


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


def _system_sections(system: str) -> tuple[str, ...]:
    return tuple(s for s in system.split("\n\n") if s.strip())


def _tokens(data: bytes) -> int:
    return text_tokens(data.decode("utf-8", "ignore"))


@dataclass(frozen=True, slots=True)
class _Encoded:
    """One history message as a request carries it."""

    data: bytes
    tokens: int
    role: str
    text: str
    checkpoint: bool


class _Wire:
    """A derivation's messages and headers as wire bytes and estimated tokens, each encoded once."""

    def __init__(self, derived: Derived) -> None:
        self.derived = derived
        self._messages: dict[int, _Encoded] = {}
        self._heads: dict[int, tuple[RequestHeader | None, tuple[tuple[str, bytes], ...], bytes, str]] = {}

    def message(self, index: int) -> _Encoded:
        found = self._messages.get(index)
        if found is None:
            message = self.derived.messages[index]
            data = jsonx.dumps_unchecked(wire_messages(None, [message]))
            text = joined_text(message.get("content", [])) or _first_block(message)
            role = str(message.get("role", ""))
            found = _Encoded(data, _tokens(data), role, text, is_checkpoint_message(message))
            self._messages[index] = found
        return found

    def _head(self, header: RequestHeader | None) -> tuple[tuple[tuple[str, bytes], ...], bytes, str]:
        key = id(header)
        found = self._heads.get(key)
        if found is None or found[0] is not header:
            given: RequestHeader = header or {}
            tools = given.get("tools")
            specs = wire_tools([t for t in tools if isinstance(t, dict)]) if isinstance(tools, list) else []
            system = given.get("system")
            text = system if isinstance(system, str) else ""
            encoded = tuple((str(s["function"]["name"]), jsonx.dumps_unchecked(s)) for s in specs)
            found = (header, encoded, jsonx.dumps_unchecked(wire_messages(text, [])) if text else b"", text)
            self._heads[key] = found
        return found[1], found[2], found[3]

    def request(self, call: RecordedCall) -> Request:
        tools, system, text = self._head(call.header)
        indexes = self.derived.history_of(call)
        encoded = [self.message(i) for i in indexes]
        head = (_tokens(b"".join(b for _, b in tools)), _tokens(system))
        return Request(
            tools,
            system,
            _system_sections(text),
            tuple(m.data for m in encoded),
            tuple(m.role for m in encoded),
            tuple(m.text for m in encoded),
            tuple(m.checkpoint for m in encoded),
            (*head, *(m.tokens for m in encoded)),
            frozenset((id(self.derived), i) for i, m in zip(indexes, encoded, strict=True) if m.checkpoint),
        )


def _first_block(message: Message) -> str:
    for block in message.get("content", []):
        kind = block.get("type")
        if kind == "tool-call":
            return f"tool call {block.get('name', '')}"
        if kind == "tool-result":
            return f"result of {block.get('toolCallId', '')}"
    return ""


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
    wire = _Wire(derived)
    reads = _cache_reads(own) if not any(e.type == ASSISTANT_CHUNK for e in own) else []
    out: list[Reuse] = []
    previous: tuple[RecordedCall, Request] | None = None
    n = settled = 0
    for call in derived.calls:
        if not call.checked:
            continue
        if _is_summary(call):
            continue
        n += 1
        request = wire.request(call)
        read = reads[settled] if settled < len(reads) else None
        settled += 1
        estimate = 0
        if previous is None and parent_at_cut is None:
            shared, broke, against = 0, None, "nothing"
        elif previous is None:
            assert parent_at_cut is not None
            shared, broke = compare(parent_at_cut, request)
            against = "the parent's request at the cut"
        elif _extends(previous[0], call):  # the same head, the same history grown: no compare
            shared, broke, against = previous[1].size, None, "the previous request"
        else:
            shared, broke = compare(previous[1], request)
            against = "the previous request"
        if shared:
            estimate = request.shared_tokens(shared)
        out.append(
            Reuse(session, n, call.turn, call.step, request.size, shared, read, against, broke, estimate)
        )
        previous = (call, request)
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
    return _Wire(derived).request(calls[-1]) if calls else None


def tree_reuse(sessions: Mapping[str, Loaded], root: str) -> list[Reuse]:
    """Every request of ``root`` and its loaded descendants (parents first), each session's
    first request against its parent's request at the cut when it is a fork child."""
    order: list[str] = []
    stack = [root]
    while stack:
        sid = stack.pop()
        if sid in order or sid not in sessions:
            continue
        order.append(sid)
        kids = [s for s, loaded in sessions.items() if loaded.header.parent_session == sid and s != sid]
        stack.extend(sorted(kids, key=lambda s: (sessions[s].header.created_at, s), reverse=True))
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

"""A model request as a provider's prompt cache sees it, and where two requests part.

A provider's prompt cache reuses the longest prefix a request shares with one it saw. A
:class:`Request` is read in the order a provider renders it — the tool schemas, the system
prompt, then the history, message by message — each part as the bytes the wire carries
(:mod:`dsh.model.openai_wire`, the mapping replay rebuilds every request with; :class:`Wire`
encodes a derivation's messages and headers once). :func:`compare` gives the bytes two
requests share and the first region that differs: ``tools`` (a tool added, removed,
reordered or its schema changed), ``the system prompt`` (its section *n*), ``message i``
(1-based, in history order) or ``a compaction`` — the one expected break (a new checkpoint:
the history was rebuilt). Per request and per session: :mod:`dsh.replay.reuse`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsh import jsonx
from dsh.events.compaction import is_checkpoint_message
from dsh.events.messages import Message, joined_text
from dsh.events.payloads import RequestHeader
from dsh.events.tokens import text_tokens
from dsh.model.openai_wire import wire_messages, wire_tools
from dsh.replay.derive import Derived, RecordedCall

SNIPPET = 40


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


class Wire:
    """A derivation's messages and headers as wire bytes and estimated tokens, each encoded once."""

    def __init__(self, derived: Derived) -> None:
        self.derived = derived
        self._messages: dict[int, _Encoded] = {}
        self._heads: dict[int, tuple[RequestHeader | None, tuple[tuple[str, bytes], ...], bytes, str]] = {}
        self._running: dict[int, tuple[list[int], list[int]]] = {}
        self._head_totals: dict[int, tuple[RequestHeader | None, int, int]] = {}

    def message(self, index: int) -> _Encoded:
        found = self._messages.get(index)
        if found is None:
            message = self.derived.messages[index]
            data = jsonx.dumps_kept(wire_messages(None, [message]))
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
            encoded = tuple((str(s["function"]["name"]), jsonx.dumps_kept(s)) for s in specs)
            found = (header, encoded, jsonx.dumps_kept(wire_messages(text, [])) if text else b"", text)
            self._heads[key] = found
        return found[1], found[2], found[3]

    def size(self, call: RecordedCall) -> int:
        """``request(call).size`` without building the request (running sums: O(1) per call)."""
        return self._totals(call.header)[0] + self._running_sums(call)[0][call.history]

    def tokens(self, call: RecordedCall) -> int:
        """The estimated tokens of every part of ``request(call)``, without building it."""
        return self._totals(call.header)[1] + self._running_sums(call)[1][call.history]

    def _totals(self, header: RequestHeader | None) -> tuple[int, int]:
        """Bytes and estimated tokens of a header's parts (the tools, the system prompt)."""
        found = self._head_totals.get(id(header))
        if found is None or found[0] is not header:
            tools, system, _ = self._head(header)
            joined = b"".join(b for _, b in tools)
            found = (header, len(joined) + len(system), _tokens(joined) + _tokens(system))
            self._head_totals[id(header)] = found
        return found[1], found[2]

    def _running_sums(self, call: RecordedCall) -> tuple[list[int], list[int]]:
        """Running bytes and estimated tokens of the call's surface's messages (``[0]``, then
        one per message), extended as far as the call's history."""
        found = self._running.get(call.surface)
        if found is None:
            found = self._running[call.surface] = ([0], [0])
        sizes, tokens = found
        for i in self.derived.surfaces[call.surface][len(sizes) - 1 : call.history]:
            encoded = self.message(i)
            sizes.append(sizes[-1] + len(encoded.data))
            tokens.append(tokens[-1] + encoded.tokens)
        return found

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

"""Model-visible views: one message as a model call sees it, normalized for comparison.

A recording and a live run are compared message by message. Each message becomes a
:class:`View` — its kind (user prompt, assistant message, tool result, or a message the
harness injected), a key (the tool call id, or the injected kind) and a canonical text of
what the model reads. Normalization makes the two sides comparable and nothing else:

- the workspace path → ``{{cwd}}`` (the live side; recordings already carry the token);
- session ids (any UUID, and the original's ``{{sessionId}}`` token) → ``{{id:N}}`` by
  first appearance in the session's history, so the same id at the same place compares
  equal and a different one does not;
- on the live side of a redacted recording, every secret → its ``<secret:KIND:HASH8>``
  placeholder (:mod:`dsh.redact`, the recording's salt), before the rules below;
- spill-file locators (``…/session-<12 hex>/<12 hex>-<name>.txt``, random by design) →
  ``{{spillLocator:<name>.txt}}``, as the original normalizes them.

Message ids, times and provider details are not model-visible and are left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dsh import jsonx
from dsh.events.compaction import CHECKPOINT_PLUGIN, is_instruction, unframed
from dsh.events.messages import Message, Source
from dsh.redact import Redactor

ViewKind = Literal["user", "assistant", "tool-result", "injected"]

_HEX = "[0-9a-fA-F]"
_UUID = re.compile(rf"\{{\{{sessionId\}}\}}|{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}")
_EVENT_TIME = re.compile(r'(\\?"time\\?": )\d+')
_OMITTED = re.compile(r"\(Omitted \d+ bytes\.")
_SPILL = re.compile(r"[^\s\"'<>()\\]*/session-[0-9a-f]{12}/[0-9a-f]{12}-([A-Za-z0-9_-]+\.txt)")
_ASSISTANT_KEYS = ("type", "text", "id", "name", "arguments")


@dataclass(frozen=True, slots=True)
class View:
    """One model-visible message, normalized. Equality ignores ``label`` and ``tool``."""

    kind: ViewKind
    key: str
    text: str
    label: str = field(default="", compare=False)
    tool: str = field(default="", compare=False)


def classify(message: Message) -> tuple[ViewKind, str]:
    """The kind of a history message and its key (call id, injected kind, or ``""``)."""
    if message.get("role") == "assistant":
        return "assistant", ""
    found = message.get("source")
    source: Source = found if isinstance(found, dict) else {"kind": ""}
    kind = source.get("kind")
    content: object = message.get("content")
    if kind == "tool" or (
        isinstance(content, list) and content and isinstance(content[0], dict)
        and content[0].get("type") == "tool-result"
    ):  # fmt: skip
        block = content[0] if isinstance(content, list) and content else {}
        call_id = block.get("toolCallId") if isinstance(block, dict) else None
        return "tool-result", str(call_id if call_id is not None else source.get("callId", ""))
    if kind == "user":
        return "user", ""
    if kind == "plugin" and isinstance(source.get("plugin"), str):
        return "injected", str(source["plugin"])
    return "injected", str(kind or "unknown")


def _payload(kind: ViewKind, message: Message) -> Any:
    if is_instruction(message):  # each harness words its own: the kind is what is compared
        return "(the compaction instruction)"
    if kind == "injected" and classify(message)[1] == CHECKPOINT_PLUGIN:
        return unframed(message)  # the summary; the framing is each harness's own words
    content: object = message.get("content")
    blocks = content if isinstance(content, list) else []
    if kind == "assistant":
        return [
            {k: b[k] for k in _ASSISTANT_KEYS if k in b}
            for b in blocks
            if isinstance(b, dict) and b.get("type") in ("text", "reasoning", "tool-call")
        ]
    if kind == "tool-result":
        block = blocks[0] if blocks and isinstance(blocks[0], dict) else {}
        return {"content": block.get("content", []), "isError": bool(block.get("isError"))}
    return blocks


_WORKSPACE_MARK = "may modify files under the session workspace: "
_WORKSPACE_ROOT = re.compile(r"(" + re.escape(_WORKSPACE_MARK) + r')"(?:[^"\\]|\\.)*"')
_WORKSPACE_ROOT_JSON = re.compile(r"(" + re.escape(_WORKSPACE_MARK) + r')\\"(?:(?!\\").)*\\"')
"""The workspace root a runtime-context snapshot names, as text and inside JSON."""


class Normalizer:
    """Normalizes the strings of one side of one session (ids numbered as they appear)."""

    __slots__ = ("_cwd", "_cwd_json", "_ids", "redactor", "scrubs")

    def __init__(
        self,
        cwd_spellings: Sequence[str] = (),
        scrubs: Sequence[tuple[re.Pattern[str], str]] = (),
        redactor: Redactor | None = None,
    ):
        self._cwd = sorted({c for c in cwd_spellings if c and c != "/"}, key=len, reverse=True)
        self._cwd_json = [jsonx.dumps_sorted(c)[1:-1] for c in self._cwd]
        self._ids: dict[str, str] = {}
        self.scrubs = tuple(scrubs)
        self.redactor = redactor

    def _id(self, match: re.Match[str]) -> str:
        raw = match.group(0).lower()
        return self._ids.setdefault(raw, f"{{{{id:{len(self._ids) + 1}}}}}")

    def _builtin(self, value: str, cwd_spellings: list[str]) -> str:
        """The built-in rules: cwd → ``{{cwd}}``, spill locators, ids by first appearance."""
        for spelling in cwd_spellings:
            if spelling in value:
                value = value.replace(spelling, "{{cwd}}")
        if _WORKSPACE_MARK in value:  # the root a runtime-context snapshot names is the session cwd
            value = _WORKSPACE_ROOT.sub(r'\1"{{cwd}}"', _WORKSPACE_ROOT_JSON.sub(r'\1\\"{{cwd}}\\"', value))
        if "/session-" in value:
            value = _SPILL.sub(r"{{spillLocator:\1}}", value)
        if "(Omitted " in value:  # the original's harness normalizes both (session-query-spill)
            value = _OMITTED.sub("(Omitted {{eventOmittedBytes}} bytes.", value)
        if '"time' in value:  # an event pretty-printed in a result (session_event_read)
            value = _EVENT_TIME.sub(r"\1{{eventTime}}", value)
        if "-" in value or "{{sessionId}}" in value:
            value = _UUID.sub(self._id, value)
        return value

    def ids(self) -> list[str]:
        """The ids (lower-case) this side has numbered, in order of first appearance."""
        return list(self._ids)

    def text(self, value: str) -> str:
        if self.redactor is not None:  # a live secret becomes the recording's placeholder first
            value = self.redactor.text(value)
        value = self._builtin(value, self._cwd)
        for pattern, replacement in self.scrubs:
            value = pattern.sub(replacement, value)
        return value

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        return value

    def canonical(self, value: Any) -> str:
        """Normalized ``value`` as compact JSON with sorted keys.

        Without scrubs the built-in rules run once over the JSON text (the cwd in its JSON
        spelling; spill locators and ids never contain characters JSON escapes); declared
        scrubs are regexes over the strings themselves, so they walk the value.
        """
        if self.scrubs or self.redactor is not None:
            return jsonx.dumps_sorted(self.walk(value))
        return self._builtin(jsonx.dumps_sorted(value), self._cwd_json)


class ViewBuilder:
    """Turns one session's history, in order, into views (each message object once)."""

    __slots__ = ("_cache", "_calls", "_counts", "normalizer")

    def __init__(self, normalizer: Normalizer) -> None:
        self.normalizer = normalizer
        self._cache: dict[int, tuple[Message, View]] = {}
        self._calls: dict[str, str] = {}
        self._counts: dict[ViewKind, int] = {"user": 0, "assistant": 0, "tool-result": 0, "injected": 0}

    def view(self, message: Message) -> View:
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        kind, key = classify(message)
        self._counts[kind] += 1
        payload = _payload(kind, message)
        tool = ""
        if kind == "assistant":
            for block in payload:
                if block.get("type") == "tool-call":
                    self._calls[str(block.get("id", ""))] = str(block.get("name", ""))
            label = f"assistant message {self._counts[kind]}"
        elif kind == "tool-result":
            tool = self._calls.get(key, "")
            label = f"the tool result of call {key}" + (f" ({tool})" if tool else "")
        elif kind == "user":
            label = f"user message {self._counts[kind]}"
        else:
            label = f"injected message {key}"
        built = View(kind, key, self.normalizer.canonical(payload), label, tool)
        self._cache[id(message)] = (message, built)
        return built

    def views(self, messages: Sequence[Message]) -> list[View]:
        return [self.view(m) for m in messages]


def pretty(text: str) -> str:
    """A view's canonical text indented for a diff (strings keep their newlines)."""
    value = jsonx.loads(text)
    lines: list[str] = []

    def emit(v: Any, indent: str) -> None:
        if isinstance(v, str):
            for i, line in enumerate(v.split("\n")):
                lines.append(f"{indent}{'' if i == 0 else '| '}{line}")
        elif isinstance(v, dict):
            for k, item in v.items():
                lines.append(f"{indent}{k}:")
                emit(item, indent + "  ")
        elif isinstance(v, list):
            for item in v:
                lines.append(f"{indent}-")
                emit(item, indent + "  ")
        else:
            lines.append(f"{indent}{jsonx.dumps(v).decode()}")

    emit(value, "")
    return "\n".join(lines)

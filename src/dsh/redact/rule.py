"""The one redaction rule: secrets in a recording become ``<secret:KIND:HASH8>``.

A :class:`Redactor` replaces, in every string it is given:

1. exact values — the provider key in use (``provider-key``), every environment value of 8
   characters or more whose variable name matches ``KEY|TOKEN|SECRET|PASSWORD|PASSWD|
   CREDENTIAL`` (``env``);
2. the well-known token shapes of :mod:`dsh.redact.patterns`;
3. the user's own regexes (``custom``; a named group ``s`` limits what is replaced).

``HASH8`` is the first 8 hex digits of HMAC-SHA256(salt, value): equal secrets stay equal
across a recording, and a replay holding the same salt turns the same live value into the
same placeholder. The salt is per recording (``input.json`` → ``replay.salt``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from dsh import jsonx
from dsh.errors import UsageError
from dsh.redact.gate import LiteralGate
from dsh.redact.patterns import (
    MIN_SECRET_VALUE,
    PROVIDER_KEY_VARIABLES,
    SECRET_NAME,
    SHAPES,
    Shape,
)

_REMEMBERED = 64
"""The cheap test's answer for a text this short is remembered (up to ``_REMEMBER`` texts)."""
_REMEMBER = 4096


def new_salt() -> str:
    """A fresh per-recording salt (32 hex digits)."""
    return secrets.token_hex(16)


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment's secret values → their kind (``provider-key`` or ``env``)."""
    environ = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for name, value in environ.items():
        if len(value) >= MIN_SECRET_VALUE and SECRET_NAME.search(name):
            out.setdefault(value, "provider-key" if name in PROVIDER_KEY_VARIABLES else "env")
    return out


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret in a text: its kind and where it stands."""

    kind: str
    start: int
    end: int


def _compile(shapes: Iterable[Shape]) -> list[tuple[Shape, re.Pattern[str]]]:
    return [(shape, re.compile(shape.pattern)) for shape in shapes]


def custom_shapes(patterns: Sequence[str], where: str = "redact") -> list[Shape]:
    """The user's regexes as shapes of kind ``custom`` (a bad regex is one line naming it)."""
    out = []
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"{where}: the regex {pattern!r} is invalid: {exc}") from exc
        out.append(Shape("custom", pattern))
    return out


def _gates(literals: Iterable[str]) -> set[str]:
    """Fewer strings to look for that together still find every literal: literals sharing
    their first three characters are looked for by their longest common prefix (``xox``
    for Slack's four; a shorter prefix, such as ``gh``, is too common in prose to gate)."""
    groups: dict[str, list[str]] = {}
    for literal in literals:
        groups.setdefault(literal[:3], []).append(literal)
    return {os.path.commonprefix(group) for group in groups.values()}  # noqa: RUF071 (strings, not paths)


def _leading_matches(pattern: re.Pattern[str], text: str, literals: Sequence[str]) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` for a pattern whose every match starts with one of
    ``literals``: matched only where they occur (a search would try every position)."""
    starts: list[int] = []
    for literal in literals:
        at = text.find(literal)
        while at >= 0:
            starts.append(at)
            at = text.find(literal, at + 1)
    end = 0
    for at in sorted(starts):
        if at >= end and (m := pattern.match(text, at)) is not None:
            end = m.end()
            yield m


def _add(found: list[Finding], kind: str, pattern: re.Pattern[str], m: re.Match[str]) -> None:
    """``m`` (its group ``s`` when it has one) as a finding, unless it overlaps one found before."""
    start, end = m.span("s") if "s" in pattern.groupindex and m.group("s") else m.span()
    if not any(f.start < end and start < f.end for f in found):
        found.append(Finding(kind, start, end))


class Redactor:
    """Redacts strings and JSON values (see the module doc). Cheap to call on clean text.

    ``mask``: every secret becomes this fixed text instead of a placeholder (the agent's own
    masking of the values it holds, :class:`dsh.tools.redaction.Redaction`).
    """

    def __init__(
        self,
        salt: str,
        *,
        values: Mapping[str, str] | None = None,
        custom: Sequence[str] = (),
        shapes: Iterable[Shape] = SHAPES,
        mask: str | None = None,
    ) -> None:
        self.salt = salt.encode()
        self._mask = mask
        ordered = sorted((values or {}).items(), key=lambda kv: -len(kv[0]))
        self._values = dict(ordered)
        self._shapes = _compile([*shapes, *custom_shapes(custom)])
        needles = {n for v in self._values for n in (v, jsonx.dumps(v).decode()[1:-1])}
        literals = {x for s, _ in self._shapes if not s.lowered for x in s.literals}
        lowered = {x for s, _ in self._shapes if s.lowered for x in s.literals}
        self._gate = LiteralGate(needles | _gates(literals), lowered)
        self._always = any(not s.literals for s, _ in self._shapes)
        self._short: dict[str, bool] = {}
        self._placeholders: dict[tuple[str, str], str] = {}
        self._found: dict[str, tuple[Finding, ...]] = {}
        """The findings of texts that passed the cheap test: a settlement's text is matched as
        its message, its ``block-end`` and its joined deltas (up to ``_REMEMBER`` texts)."""

    @classmethod
    def for_recording(
        cls,
        salt: str,
        *,
        provider_key: str | None = None,
        environ: Mapping[str, str] | None = None,
        custom: Sequence[str] = (),
    ) -> Redactor:
        """The redactor a recording is written with: the provider key, the environment's
        secret values, the token shapes and the user's regexes."""
        values = secret_values(environ)
        if provider_key and len(provider_key) >= MIN_SECRET_VALUE:
            values[provider_key] = "provider-key"
        return cls(salt, values=values, custom=custom)

    def may_hold(self, text: str) -> bool:
        """``False`` only when neither ``text`` nor any string whose JSON encoding is inside
        ``text`` can hold a secret (no secret value, in either spelling, and no shape's
        literal is there; a user regex, having no literal, always may): the one cheap test
        that lets a writer pass a clean event through without walking it."""
        if self._always:
            return True
        if len(text) > _REMEMBERED:
            return self._gate(text)
        known = self._short.get(text)  # the keys, kinds and names every event repeats
        if known is None:
            known = self._gate(text)
            if len(self._short) < _REMEMBER:
                self._short[text] = known
        return known

    def holding(self, texts: Sequence[str]) -> list[bool]:
        """``[may_hold(t) for t in texts]``, with each of the gate's scans made once over all
        of them (a recording's events): most recordings hold a few secrets in many events."""
        return [True] * len(texts) if self._always else self._gate.holding(texts)

    def holding_values(self, values: Sequence[Any]) -> list[bool]:
        """:meth:`holding` of each JSON value's encoding: the values encoded as the gate goes
        (a block of them scanned while its text is still in the CPU's cache)."""
        if self._always:
            return [True] * len(values)
        return self._gate.holding_utf8(map(jsonx.dumps_unchecked, values))

    def holding_utf8(self, encoded: Sequence[bytes]) -> list[bool]:
        """:meth:`holding` of texts given UTF-8 encoded (the JSON lines a writer has made)."""
        return [True] * len(encoded) if self._always else self._gate.holding_utf8(encoded)

    def placeholder(self, kind: str, value: str) -> str:
        """``<secret:KIND:HASH8>``, or the fixed ``mask`` this redactor was made with."""
        if self._mask is not None:
            return self._mask
        known = self._placeholders.get((kind, value))
        if known is None:
            digest = hmac.new(self.salt, value.encode(), hashlib.sha256).hexdigest()[:8]
            known = f"<secret:{kind}:{digest}>"
            if len(self._placeholders) < _REMEMBER:  # a secret recurs: its message, block-end, deltas
                self._placeholders[(kind, value)] = known
        return known

    def findings(self, text: str) -> list[Finding]:
        """Every secret in ``text``, in order, without overlaps (exact values first)."""
        return list(self._findings(text))

    def _findings(self, text: str) -> tuple[Finding, ...]:
        known = self._found.get(text)
        if known is not None:
            return known
        if not self.may_hold(text):  # most strings: a few scans, no pattern run
            return ()
        found = tuple(self._match(text))
        if len(self._found) < _REMEMBER:
            self._found[text] = found
        return found

    def _match(self, text: str) -> list[Finding]:
        """:meth:`findings` of a text that may hold a secret: every rule run over it."""
        found: list[Finding] = []
        present = [v for v in self._values if v in text]  # longest first: a value inside another loses
        for value in present:
            at = text.find(value)
            while at >= 0:
                end = at + len(value)
                if not any(f.start < end and at < f.end for f in found):
                    found.append(Finding(self._values[value], at, end))
                at = text.find(value, end)
        lowered: str | None = None
        for shape, pattern in self._shapes:
            if shape.literals:
                haystack = text
                if shape.lowered:
                    lowered = haystack = text.lower() if lowered is None else lowered
                for literal in shape.literals:  # no generator per shape: a loop with an else
                    if literal in haystack:
                        break
                else:
                    continue
            if shape.leading and not shape.lowered:
                matches: Iterable[re.Match[str]] = _leading_matches(pattern, text, shape.literals)
            else:
                matches = pattern.finditer(text)
            for m in matches:
                _add(found, shape.kind, pattern, m)
        return sorted(found, key=lambda f: f.start)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by its placeholder."""
        found = self._findings(text)
        if not found:
            return text
        out, at = [], 0
        for f in found:
            out += [text[at : f.start], self.placeholder(f.kind, text[f.start : f.end])]
            at = f.end
        out.append(text[at:])
        return "".join(out)

    def pieces(self, parts: Sequence[str]) -> list[str]:
        """``parts`` (consecutive pieces of one text: a stream's deltas) redacted as the whole
        they make, piece for piece: a secret split across pieces becomes one placeholder in the
        piece where it starts, and its rest is cut from the pieces after (which may end empty).
        ``"".join(pieces(parts)) == text("".join(parts))``; the number of pieces is kept, and
        a piece no secret touches is returned as it is (the same object)."""
        whole = "".join(parts)
        found = self._findings(whole)
        out = list(parts)
        if not found:
            return out
        ends = list(accumulate(map(len, parts)))
        touched = sorted(
            {k for f in found for k in range(bisect_right(ends, f.start), bisect_right(ends, f.end - 1) + 1)}
        )
        first = 0
        for k in touched:
            end = ends[k]
            start = end - len(parts[k])
            while found[first].end <= start:
                first += 1
            piece, cursor, i = [], start, first
            while i < len(found) and found[i].start < end:
                f = found[i]
                if f.start > cursor:
                    piece.append(whole[cursor : f.start])
                if f.start >= start:
                    piece.append(self.placeholder(f.kind, whole[f.start : f.end]))
                cursor = max(cursor, min(f.end, end))
                i += 1
            piece.append(whole[cursor:end])
            out[k] = "".join(piece)
        return out

    def value(self, value: Any) -> Any:
        """A JSON value with every string redacted (keys are kept; nothing else changes)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

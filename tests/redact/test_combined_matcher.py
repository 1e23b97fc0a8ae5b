"""The combined matcher (``dsh.redact.gate``: one gate per recording, one scan per group of
literals, one joined scan for many texts) answers exactly as the per-pattern rule it replaced:
the same findings, text, pieces and cheap test on many generated texts — overlapping
matches, a value inside another, secrets split across pieces, texts that ``str.lower``
lengthens (``İ``) or that hold the joining character — and the same redacted events."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Iterable, Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh import jsonx
from dsh.events import Event, encode_event
from dsh.events.redaction import json_value, json_values, redact_encoded, redact_event, redact_events
from dsh.redact import SHAPES, Redactor, Shape
from dsh.redact.gate import LiteralGate
from dsh.redact.rule import Finding, custom_shapes

# -- the per-pattern rule as it was (each literal one scan, each shape one pass, per text) ------


def _gates(literals: Iterable[str]) -> set[str]:
    groups: dict[str, list[str]] = {}
    for literal in literals:
        groups.setdefault(literal[:3], []).append(literal)
    return {os.path.commonprefix(group) for group in groups.values()}  # noqa: RUF071


class PerPattern:
    def __init__(self, salt: str, values: Mapping[str, str], custom: Sequence[str] = ()) -> None:
        self.salt = salt.encode()
        self._values = dict(sorted(values.items(), key=lambda kv: -len(kv[0])))
        self._shapes = [(s, re.compile(s.pattern)) for s in [*SHAPES, *custom_shapes(custom)]]
        needles = {n for v in self._values for n in (v, jsonx.dumps(v).decode()[1:-1])}
        literals = {x for s, _ in self._shapes if not s.lowered for x in s.literals}
        self._plain = tuple(sorted(needles | _gates(literals)))
        self._lowered = tuple(sorted({x for s, _ in self._shapes if s.lowered for x in s.literals}))
        self._always = any(not s.literals for s, _ in self._shapes)

    def may_hold(self, text: str) -> bool:
        if self._always:
            return True
        if any(needle in text for needle in self._plain):
            return True
        lowered = text.lower()
        return any(x in lowered for x in self._lowered)

    def findings(self, text: str) -> list[Finding]:
        found: list[Finding] = []
        for value in [v for v in self._values if v in text]:
            at = text.find(value)
            while at >= 0:
                end = at + len(value)
                if not any(f.start < end and at < f.end for f in found):
                    found.append(Finding(self._values[value], at, end))
                at = text.find(value, end)
        lowered: str | None = None
        for shape, pattern in self._shapes:
            if shape.literals:
                if shape.lowered:
                    lowered = text.lower() if lowered is None else lowered
                    if not any(lit in lowered for lit in shape.literals):
                        continue
                elif not any(lit in text for lit in shape.literals):
                    continue
            for m in pattern.finditer(text):
                start, end = m.span("s") if "s" in pattern.groupindex and m.group("s") else m.span()
                if not any(f.start < end and start < f.end for f in found):
                    found.append(Finding(shape.kind, start, end))
        return sorted(found, key=lambda f: f.start)

    def text(self, text: str) -> str:
        out, at = [], 0
        for f in self.findings(text):
            digest = hmac.new(self.salt, text[f.start : f.end].encode(), hashlib.sha256).hexdigest()[:8]
            out += [text[at : f.start], f"<secret:{f.kind}:{digest}>"]
            at = f.end
        return "".join([*out, text[at:]])


# -- generated texts ------------------------------------------------------------------------

VALUES = {
    "hunter2-secret-value": "env",
    "secret-value": "env",  # inside the one above: the longer wins where both are
    'quo"te\\d-secret': "env",  # a JSON spelling that differs
    "sk-live-provider-key-0123456789abcdef": "provider-key",  # a value that is also a shape
}
FRAGMENTS = [
    "sk-",
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "gho_",
    "github_pat_11ABCDEFG0123456789_abcdefghijkl",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIA",
    "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "xoxb-1234567890-abcdefghijkl",
    "xox",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "eyJ",
    "Bearer ",
    "BEARER ",
    "bEaReR\t",
    "aws_secret_access_key = ",
    "AWSSECRETKEY:",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "https://user:",
    "p4ss@host/",
    "://",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
    "PRIVATE KEY-----",
    *VALUES,
    "İ",  # lowered: two characters
    "\u212a",  # the Kelvin sign: lowered, an ASCII k
    "\0",
    '"',
    "\\",
    "\n",
    "the session log keeps every delta ",
    "enough high ",
    "0123456789",
    "A",
    "_",
    "-",
]
texts = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(alphabet='abcsk-_:/AKIJSxyzé İ\0"', max_size=6)),
    max_size=12,
).map("".join)


def both(custom: Sequence[str] = ()) -> tuple[Redactor, PerPattern]:
    return Redactor("salt-1", values=VALUES, custom=custom), PerPattern("salt-1", VALUES, custom)


COMBINED, REFERENCE = both()


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_one_text_is_found_and_redacted_as_the_per_pattern_rule_does(text: str) -> None:
    assert COMBINED.may_hold(text) == REFERENCE.may_hold(text)
    assert COMBINED.findings(text) == REFERENCE.findings(text)
    assert COMBINED.text(text) == REFERENCE.text(text)


@settings(max_examples=600, deadline=None)
@given(st.lists(texts, max_size=20))
def test_many_texts_at_once_are_tested_as_each_alone(many: list[str]) -> None:
    assert COMBINED.holding(many) == [REFERENCE.may_hold(t) for t in many]


@settings(max_examples=400, deadline=None)
@given(texts, st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_pieces_split_anywhere_are_redacted_as_the_whole(text: str, cuts: list[int]) -> None:
    at = sorted({min(c, len(text)) for c in cuts})
    parts = [text[a:b] for a, b in zip([0, *at], [*at, len(text)], strict=True)]
    assert "".join(COMBINED.pieces(parts)) == REFERENCE.text(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_events_redacted_at_once_are_those_redacted_one_by_one(many: list[str]) -> None:
    chunks = [{"type": "text-delta", "index": 0, "text": t} for t in many]
    settlement = {"message": {"content": "".join(many)}, "stream": {"chunks": chunks}}
    prompts = [{"content": [{"type": "text", "text": t}]} for t in many]
    events = [
        Event("assistant/message", 1, 0, settlement),
        *(Event("user/message", i + 2, 0, data) for i, data in enumerate(prompts)),
    ]
    assert redact_events(events, COMBINED) == [redact_event(e, COMBINED) for e in events]
    lines = [encode_event(e) for e in events]
    assert redact_encoded(events, lines, COMBINED) == [redact_event(e, COMBINED) for e in events]
    values = [{"text": t} for t in many]
    assert json_values(values, COMBINED) == [json_value(v, COMBINED) for v in values]


def test_a_custom_regex_is_always_looked_for() -> None:
    combined, reference = both(["ACME-[0-9]+"])
    for text in ("ACME-42 and sk-", "plain", "\0ACME-1"):
        assert combined.findings(text) == reference.findings(text)
    assert combined.holding(["plain", "x"]) == [True, True]


def test_the_gate_finds_every_literal_it_is_given_and_nothing_else() -> None:
    gate = LiteralGate(["ghp_", "gho_", "github_pat_", "sk-", "AKIA", "AIza"], ["bearer", "aws_secret"])
    for text in ("ghp_", "x gho_", "github_pat_", "sk-", "AKIA", "..AIza", "BeArEr", "AWS_SECRET", "\u212a"):
        assert gate(text) == (text not in ("\u212a",)), text
    assert not gate("gh_ ghx sk AKI AIz bear aws-secret")
    assert gate.holding(["a", "b sk-", "c", "İ bearer", "d"]) == [False, True, False, True, False]
    # lowering lengthens the whole (İ: two characters): its offsets no longer name the texts
    assert gate.holding(["İ" * 10 + "bearer", "a", "b"]) == [True, False, False]


def test_only_two_characters_outside_ascii_lower_to_an_ascii_letter() -> None:
    """The gate anchors a case-insensitive literal on its letter in either case and on these."""
    found = [chr(c) for c in range(0x80, 0x110000) if any(x.isascii() for x in chr(c).lower())]
    assert found == ["\u0130", "\u212a"]


def test_the_shapes_literals_are_what_the_gate_is_built_from() -> None:
    """The gate is only as good as each shape's literals: each shape's samples hold one."""
    for shape in SHAPES:
        assert isinstance(shape, Shape) and shape.literals, shape.kind

"""The cheap test a text may hold a secret: is any of a rule's literals in it?

Built once per :class:`dsh.redact.rule.Redactor` (a recording's rule). It looks for every
literal — each shape's (:mod:`dsh.redact.patterns`), each secret value in both spellings —
with as few passes over the text as CPython makes fast:

- each literal has an *anchor*, its character least common in prose and JSON; literals
  sharing an anchor are one :class:`_Unit`, and a unit is looked at only when the text
  holds its anchor (a one-character test: ``memchr``);
- a unit of one literal is one ``str.rfind`` (on CPython 3.11 it runs at about twice the
  speed of ``find`` / ``in`` on a recording's JSON); a unit of many hops from one
  occurrence of its anchor to the one before (``rfind`` of one character: ``memrchr``) and
  checks its literals there, and falls back to one ``rfind`` per literal when the anchor is
  too common for hops to pay;
- literals looked for case-insensitively are scanned in the text lowered once (``str.lower``
  turns only two characters outside ASCII into ASCII letters, ``İ`` and the Kelvin sign;
  they anchor ``i`` and ``k`` too).

:meth:`LiteralGate.holding` answers for many texts at once (every event of a recording):
they are joined and each unit scans the whole once, from its end: the last occurrence names
a text, and the scan goes on before that text (and the texts before it already known to
hold a literal). The answer is exact: a text holds some literal or it does not.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate

_BY_FREQUENCY = ' e"ta:o,insrhl-dcu{}m0123456789fpgwybv.kx[]jqzETAOINSRHLDCUMFPGWYBVKXJQZ'
"""Characters from the most to the least common in prose and JSON; any other is rarer still."""

_LOWERING_TO_ASCII = ("\u0130", "\u212a")
"""The only characters outside ASCII whose ``str.lower`` holds an ASCII letter (``i``, ``k``)."""

_SHORT = 256
"""Below this length a text is searched for each literal in turn (``in``), without anchors
or units (the search of a short text costs less than the anchors' tests)."""

_BLOCK = 1 << 16
"""Many texts are scanned joined in blocks of at most this many characters: a block is
allocated where the last one was freed (a joined recording of a few MB would be mapped
afresh and fault in page by page, on every call) and a unit is scanned in a block only when
the block holds its anchor."""

_JOIN = "\0"
"""What joins the texts :meth:`LiteralGate.holding` scans at once (in no literal)."""

_HOPS = 32
_HOP_CHARS = 4096
"""A unit of many literals hops over at most ``_HOPS`` occurrences of its key, plus one per
``_HOP_CHARS`` characters per literal scanned (a quarter of what its ``rfind`` per literal
would cost), before it falls back to those ``rfind``."""

_CORE = 4
"""Literals sharing a substring this long are one unit searched for it."""


def _minimal(literals: Iterable[str]) -> list[str]:
    """The literals without any that holds a shorter one (finding the shorter is enough)."""
    out: list[str] = []
    for literal in sorted(set(literals), key=len):
        if literal and not any(kept in literal for kept in out):
            out.append(literal)
    return sorted(out)


def _rarest(literal: str) -> str:
    """The character of ``literal`` least common in prose and JSON."""
    return max(sorted(set(literal)), key=lambda c: _BY_FREQUENCY.find(c) % (len(_BY_FREQUENCY) + 1))


def _anchors(char: str, lowered: bool) -> str:
    """The characters one of which a text holding ``char`` holds (lowered: in either case)."""
    if not lowered:
        return char
    return "".join(dict.fromkeys([char, char.upper(), *(x for x in _LOWERING_TO_ASCII if char in x.lower())]))


class _Unit:
    """Literals sharing a *key* — one character (their anchor), or a substring of at least
    ``_CORE`` characters — where the last of them starts in a text."""

    __slots__ = ("anchor", "anchors", "checks", "key", "literals")

    def __init__(self, key: str, literals: list[str], lowered: bool) -> None:
        self.key = key
        self.anchor = _rarest(key)
        self.anchors = _anchors(self.anchor, lowered)
        self.literals = tuple(literals)
        self.checks = tuple((lit, at) for lit in literals for at in _offsets(lit, key))
        """Each literal with each offset of the key in it."""

    def last(self, text: str, end: int) -> int:
        """Where the last occurrence of a literal lying wholly in ``text[:end]`` starts (-1: none);
        ``end``: the end of ``text`` or a joining character (in no literal: one found before
        it does not run past it)."""
        if len(self.literals) == 1:
            return text.rfind(self.literals[0], 0, end)
        budget = _HOPS + end * len(self.literals) // _HOP_CHARS
        key, at, before = self.key, end, end
        while budget:
            at = text.rfind(key, 0, before)
            if at < 0:
                return -1
            for literal, offset in self.checks:
                start = at - offset
                if start >= 0 and text.startswith(literal, start):
                    return start
            before = at + len(key) - 1
            budget -= 1
        # every occurrence whose key starts at or after ``at`` was checked: look before it
        return max(text.rfind(lit, 0, min(end, at - off + len(lit) - 1)) for lit, off in self.checks)


def _offsets(literal: str, key: str) -> list[int]:
    return [at for at in range(len(literal) - len(key) + 1) if literal.startswith(key, at)]


def _common(a: str, b: str, least: int) -> str:
    """The longest substring of ``a`` that ``b`` holds (the first of them); ``""`` when it is
    shorter than ``least``."""
    for size in range(min(len(a), len(b)), least - 1, -1):
        for at in range(len(a) - size + 1):
            if a[at : at + size] in b:
                return a[at : at + size]
    return ""


def _units(literals: Iterable[str], lowered: bool) -> list[_Unit]:
    """The ``literals`` as units: those sharing a substring of ``_CORE`` characters or more
    one unit keyed by it (a value and its JSON spelling; ``aws_secret`` and ``awssecret``);
    the others one per anchor."""
    cores: list[tuple[str, list[str]]] = []
    for literal in _minimal(literals):
        for k, (core, group) in enumerate(cores):
            shared = _common(core, literal, _CORE)
            if len(shared) >= _CORE:
                cores[k] = (shared, [*group, literal])
                break
        else:
            cores.append((literal, [literal]))
    units = [_Unit(core, group, lowered) for core, group in cores if len(group) > 1]
    by_anchor: dict[str, list[str]] = {}
    for _, (literal, *more) in cores:
        if not more:
            by_anchor.setdefault(_rarest(literal), []).append(literal)
    units += [_Unit(anchor, group, lowered) for anchor, group in sorted(by_anchor.items())]
    return units


def _blocks(sizes: list[int]) -> Iterator[tuple[int, int, list[int]]]:
    """The texts of these sizes in consecutive blocks ``[i, j)`` joined (by one character) to
    at most ``_BLOCK`` characters (a longer text alone), each with its texts' starts in it."""
    ends = list(accumulate(size + 1 for size in sizes))
    i = 0
    while i < len(sizes):
        base = ends[i - 1] if i else 0
        j = max(i + 1, bisect_right(ends, base + _BLOCK + 1))
        yield i, j, [0, *(end - base for end in ends[i : j - 1])]
        i = j


def _anchored(anchors: str, text: str) -> bool:
    return any(anchor in text for anchor in anchors)


class LiteralGate:
    """Whether a text holds any of ``plain``, or any of ``lowered`` (given in lower case)
    once lowered."""

    __slots__ = ("_joinable", "_lowered", "_lowered_literals", "_plain", "_plain_literals")

    def __init__(self, plain: Iterable[str], lowered: Iterable[str] = ()) -> None:
        plain, lowered = set(plain), set(lowered)
        self._plain = _units(plain, lowered=False)
        self._lowered = _units(lowered, lowered=True)
        self._plain_literals = tuple(_minimal(plain))
        self._lowered_literals = tuple(_minimal(lowered))
        self._joinable = not any(_JOIN in literal for literal in plain | lowered)

    def __call__(self, text: str) -> bool:
        if len(text) < _SHORT:  # a short text: each literal looked for, no anchors, no units
            for literal in self._plain_literals:
                if literal in text:
                    return True
            if self._lowered_literals:
                lowered = text.lower()
                for literal in self._lowered_literals:
                    if literal in lowered:
                        return True
            return False
        for unit in self._plain:  # a plain unit's anchor is one character: one memchr
            if unit.anchor in text and unit.last(text, len(text)) >= 0:
                return True
        low: str | None = None
        for unit in self._lowered:
            if _anchored(unit.anchors, text):
                low = text.lower() if low is None else low
                if unit.last(low, len(low)) >= 0:
                    return True
        return False

    def holding(self, texts: Sequence[str]) -> list[bool]:
        """For each of ``texts``, ``gate(text)`` — each unit's scan made once per block of them."""
        if not self._joinable or len(texts) < 2:
            return [self(text) for text in texts]
        held: list[bool] = []
        for i, j, starts in _blocks([len(t) for t in texts]):
            held += self._held(_JOIN.join(texts[i:j]), starts, texts[i:j])
        return held

    def holding_utf8(self, encoded: Iterable[bytes]) -> list[bool]:
        """:meth:`holding` of texts given UTF-8 encoded (JSON as ``orjson`` writes it), taken
        as they come: each block is joined, decoded and scanned once it is full (while its
        texts are still in the CPU's cache), not text by text."""
        held: list[bool] = []
        block: list[bytes] = []
        size = -1
        for blob in encoded:
            if block and size + len(blob) >= _BLOCK:
                held += self._held_utf8(block)
                block, size = [], -1
            block.append(blob)
            size += len(blob) + 1
        return held + self._held_utf8(block) if block else held

    def _held_utf8(self, block: list[bytes]) -> list[bool]:
        if not self._joinable or len(block) < 2:
            return [self(blob.decode()) for blob in block]
        joined = _JOIN.encode().join(block)
        whole = joined.decode()
        if len(whole) != len(joined):  # not ASCII: byte offsets are not character offsets
            return self.holding([blob.decode() for blob in block])
        return self._held(whole, [0, *accumulate(len(b) + 1 for b in block[:-1])], None)

    def _held(self, whole: str, starts: list[int], texts: Sequence[str] | None) -> list[bool]:
        """``holding`` of the texts joined in ``whole`` (``texts``: them, when at hand)."""
        held = [False] * len(starts)
        self._mark(whole, starts, [u for u in self._plain if u.anchor in whole], held)
        lowered_units = [u for u in self._lowered if _anchored(u.anchors, whole)]
        if lowered_units:
            lowered = whole.lower()
            if len(lowered) == len(whole):  # character for character: the offsets still hold
                self._mark(lowered, starts, lowered_units, held)
            else:
                ends = [*(s - 1 for s in starts[1:]), len(whole)]
                each = texts if texts is not None else [whole[a:b] for a, b in zip(starts, ends, strict=True)]
                held = [h or self(text) for h, text in zip(held, each, strict=True)]
        return held

    @staticmethod
    def _mark(whole: str, starts: list[int], units: list[_Unit], held: list[bool]) -> None:
        """Set ``held[i]`` for each text ``i`` (from ``starts[i]`` in ``whole``) a unit finds a
        literal in; from the end: after a find the scan goes on before that text and before
        the texts just before it already held."""
        for unit in units:
            end = len(whole)
            while True:
                at = unit.last(whole, end)
                if at < 0:
                    break
                i = bisect_right(starts, at) - 1
                held[i] = True
                while i > 0 and held[i - 1]:
                    i -= 1
                if i == 0:
                    break
                end = starts[i] - 1

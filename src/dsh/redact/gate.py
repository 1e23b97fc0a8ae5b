"""The cheap test a text may hold a secret: is any of a rule's literals in it?

Built once per :class:`dsh.redact.rule.Redactor` (a recording's rule). It looks for every
literal — each shape's (:mod:`dsh.redact.patterns`), each secret value in both spellings —
with as few scans as CPython makes fast:

- literals sharing their first two characters are one compiled alternation behind that
  literal prefix (``re`` skips to the prefix at C speed; an alternation without one tries
  every branch at every position and is several times slower than the plain scans it would
  replace); every other literal is a ``str`` search;
- each scan is made only when the text holds its *anchor*, the character of its literals
  least common in prose and JSON, looked for with a one-character test (``memchr``);
- literals looked for case-insensitively are scanned in the text lowered once (``str.lower``
  turns only two characters outside ASCII into ASCII letters, ``İ`` and the Kelvin sign;
  they anchor ``i`` and ``k`` too).

:meth:`LiteralGate.holding` answers for many texts at once (every event of a recording):
they are joined and each scan runs once over the whole, so a clean recording costs a few
scans in all rather than a few per event. The answer is exact: a text holds some literal
or it does not.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate

_PREFIX = 2
"""Literals sharing this many first characters are looked for in one scan."""

_BY_FREQUENCY = ' e"ta:o,insrhl-dcu{}m0123456789fpgwybv.kx[]jqzETAOINSRHLDCUMFPGWYBVKXJQZ'
"""Characters from the most to the least common in prose and JSON; any other is rarer still."""

_LOWERING_TO_ASCII = ("\u0130", "\u212a")
"""The only characters outside ASCII whose ``str.lower`` holds an ASCII letter (``i``, ``k``)."""

_SHORT = 256
"""Below this length a text is scanned for each group without looking for its anchors first
(the scan of a short text costs less than the anchors' tests)."""

_JOIN = "\0"
"""What joins the texts :meth:`LiteralGate.holding` scans at once (in no literal)."""

Find = Callable[[str, int], int]
"""Where the first literal of a group starts in a text at or after a position (-1: nowhere)."""


def _minimal(literals: Iterable[str]) -> list[str]:
    """The literals without any that holds a shorter one (finding the shorter is enough)."""
    out: list[str] = []
    for literal in sorted(set(literals), key=len):
        if literal and not any(kept in literal for kept in out):
            out.append(literal)
    return sorted(out)


def _rarest(group: list[str]) -> str:
    """The character every literal of ``group`` holds that is least common."""
    shared = set(group[0]).intersection(*group[1:])
    return max(sorted(shared), key=lambda c: _BY_FREQUENCY.find(c) % (len(_BY_FREQUENCY) + 1))


def _anchors(char: str, lowered: bool) -> str:
    """The characters one of which a text holding ``char`` holds (lowered: in either case)."""
    if not lowered:
        return char
    return "".join(dict.fromkeys([char, char.upper(), *(x for x in _LOWERING_TO_ASCII if char in x.lower())]))


def _finder(group: list[str], prefix: str) -> Find:
    if len(group) == 1:
        return _find_str(group[0])
    rests = "|".join(re.escape(literal[len(prefix) :]) for literal in group)
    return _find_re(re.compile(f"{re.escape(prefix)}(?:{rests})"))


def _find_str(needle: str) -> Find:
    return lambda text, at: text.find(needle, at)


def _find_re(pattern: re.Pattern[str]) -> Find:
    def find(text: str, at: int) -> int:
        m = pattern.search(text, at)
        return -1 if m is None else m.start()

    return find


def _scans(literals: Iterable[str], lowered: bool) -> list[tuple[str, Find]]:
    """For each group of ``literals`` (by prefix): its anchors and how to find it."""
    groups: dict[str, list[str]] = {}
    for literal in _minimal(literals):
        groups.setdefault(literal[:_PREFIX], []).append(literal)
    return [(_anchors(_rarest(g), lowered), _finder(g, prefix)) for prefix, g in groups.items()]


def _anchored(anchors: str, text: str) -> bool:
    return any(anchor in text for anchor in anchors)


class LiteralGate:
    """Whether a text holds any of ``plain``, or any of ``lowered`` (given in lower case)
    once lowered."""

    __slots__ = ("_joinable", "_lowered", "_plain")

    def __init__(self, plain: Iterable[str], lowered: Iterable[str] = ()) -> None:
        plain, lowered = set(plain), set(lowered)
        self._plain = _scans(plain, lowered=False)
        self._lowered = _scans(lowered, lowered=True)
        self._joinable = not any(_JOIN in literal for literal in plain | lowered)

    def __call__(self, text: str) -> bool:
        short = len(text) < _SHORT
        for anchor, find in self._plain:  # a plain group's anchor is one character: one memchr
            if (short or anchor in text) and find(text, 0) >= 0:
                return True
        lowered: str | None = None
        for anchors, find in self._lowered:
            if short or _anchored(anchors, text):
                lowered = text.lower() if lowered is None else lowered
                if find(lowered, 0) >= 0:
                    return True
        return False

    def holding(self, texts: Sequence[str]) -> list[bool]:
        """For each of ``texts``, ``gate(text)`` — each scan made once over them all."""
        if not self._joinable or len(texts) < 2:
            return [self(text) for text in texts]
        whole = _JOIN.join(texts)
        starts = list(accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
        held = [False] * len(texts)
        self._mark(whole, starts, self._plain, held)
        if any(_anchored(anchors, whole) for anchors, _ in self._lowered):
            lowered = whole.lower()
            if len(lowered) == len(whole):  # character for character: the offsets still hold
                self._mark(lowered, starts, self._lowered, held)
            else:
                held = [h or self(text) for h, text in zip(held, texts, strict=True)]
        return held

    @staticmethod
    def _mark(whole: str, starts: list[int], scans: list[tuple[str, Find]], held: list[bool]) -> None:
        """Set ``held[i]`` for each text ``i`` (from ``starts[i]`` in ``whole``) a scan finds
        a literal in; after a find the scan goes on from the next text."""
        for anchors, find in scans:
            if not _anchored(anchors, whole):
                continue
            at = find(whole, 0)
            while at >= 0:
                i = bisect_right(starts, at) - 1
                held[i] = True
                if i + 1 >= len(starts):
                    break
                at = find(whole, starts[i + 1])

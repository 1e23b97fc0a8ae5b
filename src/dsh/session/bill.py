"""A ledger as it is priced: the one home of the rule that calls are priced by route and minute.

A price is looked up at the time a call was made, and price changes (a start date, a time
of day) fall on whole minutes; the calls of one route in one minute are priced together
(tiered prices see their summed tokens). A :class:`Bill` keeps just that — the call count
and the tokens per (route, minute) — so a listing keeps and adds it up per session without
holding every call, and grouping is associative: the bill of a tree is the sum of its
sessions' bills, exactly what grouping all their calls at once gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from dsh.ids import now_ms
from dsh.session.usage import Ledger, Route, Tokens

MINUTE_MS = 60_000

Slot = tuple[Route, int]
"""``(route, minute)``: the minute as epoch ms, floored."""


def minute_of(at: int | None) -> int:
    """The minute (epoch ms, floored) a call made at ``at`` is priced at; ``None``: now."""
    return ((now_ms() if at is None else at) // MINUTE_MS) * MINUTE_MS


@dataclass(frozen=True, slots=True)
class Bill:
    """How many calls, and their tokens per (route, minute)."""

    calls: int = 0
    slots: Mapping[Slot, Tokens] = field(default_factory=dict)
    kept: tuple[str, str, tuple[str, ...]] | None = field(default=None, compare=False)
    """Its cost as a price table priced it, kept with it: ``(the table's key, the priced US
    dollars as a decimal string, the unpriced models)`` (``dsh.session.prices``)."""

    @classmethod
    def of(cls, ledger: Ledger) -> Bill:
        slots: dict[Slot, Tokens] = {}
        for call in ledger.calls:
            key = (call.route, minute_of(call.time))
            slots[key] = slots[key] + call.tokens if key in slots else call.tokens
        return cls(len(ledger.calls), slots)

    @classmethod
    def total(cls, bills: list[Bill]) -> Bill:
        """The bill of all of ``bills`` (one of them itself when it is the only one)."""
        if len(bills) == 1:
            return bills[0]
        slots: dict[Slot, Tokens] = {}
        for bill in bills:
            for key, tokens in bill.slots.items():
                slots[key] = slots[key] + tokens if key in slots else tokens
        return cls(sum(b.calls for b in bills), slots)  # a sum's cost is priced again

    @property
    def tokens(self) -> Tokens:
        return sum(self.slots.values(), Tokens())

    def to_wire(self) -> dict[str, object]:
        """``{"calls": N, "slots": [[model, provider, minute, input, output, cacheRead,
        cacheWrite, reasoning], ...]}`` (what :meth:`from_wire` reads back)."""
        rows = [[*route, minute, *_counts(t)] for (route, minute), t in self.slots.items()]
        out: dict[str, object] = {"calls": self.calls, "slots": rows}
        if self.kept is not None:
            key, priced, unknown = self.kept
            out["cost"] = [key, priced, list(unknown)]
        return out

    @classmethod
    def from_wire(cls, obj: object) -> Bill | None:
        """A bill back from :meth:`to_wire` (``None``: not what it writes)."""
        if not isinstance(obj, dict) or type(obj.get("calls")) is not int:
            return None
        if type(obj.get("slots")) is not list:
            return None
        slots: dict[Slot, Tokens] = {}
        for row in obj["slots"]:
            if type(row) is not list or len(row) != 8:
                return None
            model, provider, minute, a, b, c, d, e = row
            if not (model is None or type(model) is str) or not (provider is None or type(provider) is str):
                return None
            if not type(minute) is type(a) is type(b) is type(c) is type(d) is type(e) is int:
                return None
            slots[((model, provider), minute)] = Tokens(a, b, c, d, e)
        return cls(obj["calls"], slots, _kept_from_wire(obj.get("cost")))


def _kept_from_wire(cost: object) -> tuple[str, str, tuple[str, ...]] | None:
    if type(cost) is not list or len(cost) != 3:
        return None
    key, priced, unknown = cost
    if type(key) is not str or type(priced) is not str or type(unknown) is not list:
        return None
    if not all(type(u) is str for u in unknown):
        return None
    try:
        if not Decimal(priced).is_finite():
            return None
    except ArithmeticError:  # decimal.InvalidOperation: not a number
        return None
    return key, priced, tuple(unknown)


def _counts(t: Tokens) -> tuple[int, int, int, int, int]:
    return (t.input, t.output, t.cache_read, t.cache_write, t.reasoning)

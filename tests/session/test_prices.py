"""A call is priced at the time it was made, never at the time it is shown."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from dsh.session.bill import Bill
from dsh.session.prices import PriceTable
from dsh.session.usage import Ledger

MILLION = {"inputTokens": 1_000_000, "outputTokens": 1_000_000}
ROUTE = ("deepseek-v4-flash", "deepseek")


def _ms(hour: int, minute: int = 0, second: int = 0) -> int:
    return int(datetime(2026, 12, 1, hour, minute, second, tzinfo=UTC).timestamp() * 1000)


def test_each_call_is_priced_at_its_own_time_of_day() -> None:
    """genai-prices 0.2.5 (pinned) lists deepseek-v4-flash at $0.30 / $1.20 per million tokens
    from 01:00 to 04:00 UTC and $0.15 / $0.60 at noon: one call in each costs 1.50 + 0.75,
    whatever the clock says when the ledger is priced."""
    ledger = Ledger()
    ledger.add(ROUTE, MILLION, seq=3, time=_ms(2))
    ledger.add(ROUTE, MILLION, seq=7, time=_ms(12))
    prices = PriceTable()
    assert prices.cost(ledger).usd == Decimal("2.25")
    assert [prices.price(c.route, c.tokens, c.time).usd for c in ledger.calls] == [
        Decimal("1.5"),
        Decimal("0.75"),
    ]


def test_the_boundary_is_the_calls_minute() -> None:
    ledger = Ledger()
    ledger.add(ROUTE, MILLION, seq=1, time=_ms(3, 59, 59))
    ledger.add(ROUTE, MILLION, seq=2, time=_ms(4, 0, 1))
    assert PriceTable().cost(ledger).usd == Decimal("2.25")


def test_a_kept_ledger_keeps_its_times() -> None:
    ledger = Ledger()
    ledger.add(ROUTE, MILLION, seq=3, time=_ms(2))
    back = Ledger.from_wire(ledger.to_wire())
    assert back is not None and back.calls == ledger.calls
    assert (
        Ledger.from_wire([{k: v for k, v in c.items() if k != "time"} for c in ledger.to_wire()]) is None
    ), "a ledger kept without times (an older dsh) is derived again"


def test_a_bill_prices_like_the_calls_it_groups_and_adds_up_across_sessions() -> None:
    """A listing keeps each session's bill (tokens per route and minute), not its calls: the
    bill of a tree is the sum of its sessions' bills, priced exactly like all their calls."""
    parent, child = Ledger(), Ledger()
    parent.add(ROUTE, MILLION, seq=1, time=_ms(2, 0, 5))
    child.add(ROUTE, MILLION, seq=1, time=_ms(2, 0, 40))  # the same minute: priced together
    child.add(ROUTE, MILLION, seq=2, time=_ms(12))
    child.add(("no-such-model", "nowhere"), MILLION, seq=3, time=_ms(12))
    every = Ledger()
    every.merge(parent)
    every.merge(child)
    tree = Bill.total([Bill.of(parent), Bill.of(child)])
    prices = PriceTable()
    assert prices.cost(tree) == prices.cost(every)
    assert prices.cost(tree).priced == Decimal("3.75") and prices.cost(tree).unknown == (
        "no-such-model@nowhere",
    )
    assert tree.calls == 4 and tree.tokens == every.tokens and len(tree.slots) == 3
    assert Bill.from_wire(tree.to_wire()) == tree
    assert Bill.from_wire({"calls": 1, "slots": [["m", None, 0, 1, 2, 3]]}) is None


def test_a_bill_keeps_its_cost_under_the_tables_key_only_when_the_table_prices_it() -> None:
    ledger = Ledger()
    ledger.add(ROUTE, MILLION, seq=1, time=_ms(2))
    prices = PriceTable()
    kept = prices.keeping_cost(Bill.of(ledger))
    assert kept.kept is not None and kept.kept[0] == prices.key and prices.cost(kept).usd == Decimal("1.5")
    back = Bill.from_wire(kept.to_wire())
    assert back is not None and back.kept == kept.kept and prices.keeping_cost(back) is back
    broken = {**kept.to_wire(), "cost": [prices.key, "not a number", []]}
    assert Bill.from_wire(broken) == kept and Bill.from_wire(broken).kept is None  # type: ignore[union-attr]
    stale = Bill(kept.calls, kept.slots, ("another table", "99", ()))
    assert prices.cost(stale).usd == Decimal("1.5"), "a cost kept under another key is priced again"
    unpriced = Ledger()
    unpriced.add((None, None), MILLION, seq=1, time=_ms(2))
    assert prices.keeping_cost(Bill.of(unpriced)).kept is None, "no table read, nothing to keep"
    override = PriceTable.load({"DSH_PRICES": "/nonexistent/prices.json"})
    assert override.key == prices.key

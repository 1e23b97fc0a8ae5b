"""A kept digest is read back only when it is exactly what this version writes: any key
missing or extra, any value of the wrong JSON type, gives ``None`` (the session is derived
again), never a digest that would mislead a listing."""

from __future__ import annotations

from typing import Any

import pytest

from dsh import jsonx
from dsh.session.bill import Bill
from dsh.session.digest import Derived, digest_from_json, digest_json
from dsh.session.usage import Ledger


def _kept() -> dict[str, Any]:
    ledger = Ledger()
    ledger.add(("deepseek-chat", "deepseek"), {"inputTokens": 12}, 4, 60_000)
    derived = Derived("t", "p", "m", 5, "completed", "fork", "l", "c", 2, 3, bill=Bill.of(ledger))
    kept = jsonx.loads(jsonx.dumps(digest_json(derived)))
    assert digest_from_json(kept) == derived
    return kept  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("title", None),
        ("first_prompt", 1),
        ("model", 1),
        ("kind", ["x"]),
        ("label", 2),
        ("call_id", {}),
        ("last_activity", "5"),
        ("last_activity", 1.5),
        ("compactions", None),
        ("compactions", True),
        ("branch_turn", "3"),
        ("status", "running"),
        ("bill", {"calls": 1}),
    ],
)
def test_a_value_of_the_wrong_type_is_not_read_back(key: str, bad: object) -> None:
    assert digest_from_json({**_kept(), key: bad}) is None


def test_a_missing_or_an_extra_key_is_not_read_back() -> None:
    kept = _kept()
    del kept["label"]
    assert digest_from_json(kept) is None
    assert digest_from_json({**_kept(), "ledger": []}) is None
    assert digest_from_json([_kept()]) is None


@pytest.mark.parametrize(
    "row",
    [
        ["m", None, 0, 1, 2, 3, 4, 5.0],
        ["m", None, 0, 1, 2, 3, 4, True],
        [1, None, 0, 1, 2, 3, 4, 5],
        ["m", 2, 0, 1, 2, 3, 4, 5],
        ["m", None, None, 1, 2, 3, 4, 5],
        ["m", None, 0, 1, 2, 3, 4],
    ],
)
def test_a_bill_slot_of_the_wrong_shape_is_not_read_back(row: list[object]) -> None:
    assert Bill.from_wire({"calls": 1, "slots": [row]}) is None
    assert Bill.from_wire({"calls": 1, "slots": [["m", None, 0, 1, 2, 3, 4, 5]]}) is not None

"""The store contract suite (``dsh.store.contract``) against every embedded backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.errors import InvalidEventError
from dsh.events import SessionHeader
from dsh.store.contract import CHECKS, ContractCheck, StoreOpener, run_contract

from .conftest import OpenerFactory


@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
async def test_contract(check: ContractCheck, opener: StoreOpener) -> None:
    await check(opener)


async def test_run_contract_gives_each_check_fresh_storage(
    tmp_path: Path, make_opener: OpenerFactory
) -> None:
    counter = iter(range(len(CHECKS)))
    await run_contract(lambda: make_opener("sqlite", tmp_path / str(next(counter))))


@pytest.mark.parametrize("field", ["created_at", "delegation_depth"])
async def test_create_refuses_header_integers_beyond_64_bits(opener: StoreOpener, field: str) -> None:
    store = await opener()
    header = SessionHeader(id="big", created_at=1).evolve(**{field: 2**63})
    with pytest.raises(InvalidEventError, match="64 bits"):
        await store.create(header)
    assert not await store.exists("big")
    await store.close()

"""The store contract suite (``dsh.store.contract``) against every embedded backend."""

from __future__ import annotations

from pathlib import Path

import pytest

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

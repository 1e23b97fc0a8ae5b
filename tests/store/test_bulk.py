"""Bulk decoding (``dsh.store.bulk.paused_gc``): what a long read decoded is kept out of the
cyclic collector's generations afterwards (issue 40, item 1), so no later collection walks a
100 k-event log again; a short read leaves the collector's generations as they were."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from dsh.store.bulk import FREEZE_AT, paused_gc, start_up


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    gc.unfreeze()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def test_what_a_long_read_decoded_is_not_collected_again(collector_on: None) -> None:
    with paused_gc():
        decoded = [[n] for n in range(FREEZE_AT * 2)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(decoded)


def test_a_short_read_leaves_the_generations_alone(collector_on: None) -> None:
    gc.collect()
    with paused_gc():
        decoded = [[n] for n in range(100)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert decoded


def test_a_nested_read_freezes_nothing_itself(collector_on: None) -> None:
    with paused_gc():
        with paused_gc():
            inner = [[n] for n in range(FREEZE_AT * 2)]
        assert gc.get_freeze_count() == 0
    assert gc.get_freeze_count() >= len(inner)


def test_a_start_up_pauses_the_collector_until_ready_then_freezes_what_it_built(collector_on: None) -> None:
    gc.collect()
    with start_up() as ready:
        assert not gc.isenabled(), "paused while the command starts"
        built = [[n] for n in range(1_000)]
        ready()
        assert gc.isenabled(), "on again for the work that follows"
        assert gc.get_freeze_count() >= len(built), "what start-up built is never walked again"
        frozen = gc.get_freeze_count()
        ready()  # only the first call counts
        assert gc.get_freeze_count() == frozen
    assert gc.isenabled()


def test_a_start_up_that_ends_unready_turns_the_collector_back_on(collector_on: None) -> None:
    with pytest.raises(RuntimeError), start_up():
        raise RuntimeError("refused before the agent opened")
    assert gc.isenabled()
    gc.unfreeze()
    gc.disable()
    with start_up() as ready:
        ready()
    assert not gc.isenabled(), "a collector that was off stays off"
    assert gc.get_freeze_count() == 0

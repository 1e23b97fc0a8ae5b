"""``run_blocking`` hands a result to its caller alone: the executor's future does not keep it
(a worker thread drops its finished job's future only when it next runs, so a long read's
events were freed there, delaying its next job)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from dsh.store.threads import run_blocking


class _Keeping(ThreadPoolExecutor):
    """A worker that keeps its last job's future until its next job, as a busy one does."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.kept: Future[Any] | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.kept = super().submit(fn, *args, **kwargs)
        return self.kept


class _Result:
    """A result that can be watched (``weakref``)."""


async def test_a_result_is_freed_when_its_caller_drops_it() -> None:
    executor = _Keeping()
    gc.disable()  # reference counts alone
    try:
        result = await run_blocking(executor, _Result)
        assert isinstance(result, _Result)
        watched = weakref.ref(result)
        del result
        assert watched() is None, "the executor's future still holds the result"
    finally:
        gc.enable()
        executor.shutdown()


async def test_an_error_still_reaches_the_caller() -> None:
    def fail() -> None:
        raise ValueError("bad")

    executor = _Keeping()
    try:
        with pytest.raises(ValueError, match="bad"):
            await run_blocking(executor, fail)
    finally:
        executor.shutdown()

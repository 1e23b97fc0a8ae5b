"""Running blocking store work (file I/O, fsync, sqlite) off the event loop, safe under cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from concurrent.futures import Executor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


async def run_blocking(
    executor: Executor | None, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
) -> T:
    """Run ``fn`` in ``executor`` (the default one when ``None``) and return its result.

    The result comes back through a box, not the executor's future: a worker thread drops its
    finished job's future only when it next runs, so a result passed through it (a long read's
    events) was freed there after the caller had dropped it — at the start of the worker's next
    job, which waited for it (5 ms for the 24 k events of a surface read).

    If the awaiting task is cancelled, the blocking call is still waited for before the
    cancellation propagates: a write that is half done must finish (or fail and roll back)
    before the caller's locks are released, so store state never races with a stale thread.
    """
    loop = asyncio.get_running_loop()
    box: list[T] = []
    future = loop.run_in_executor(executor, _into, box, functools.partial(fn, *args, **kwargs))
    try:
        await asyncio.shield(future)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await future
        raise
    return box.pop()


def _into(box: list[T], call: Callable[[], T]) -> None:
    """Run ``call`` and put its result in ``box`` (the caller's only)."""
    box.append(call())

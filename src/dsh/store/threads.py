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

    If the awaiting task is cancelled, the blocking call is still waited for before the
    cancellation propagates: a write that is half done must finish (or fail and roll back)
    before the caller's locks are released, so store state never races with a stale thread.
    """
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(executor, functools.partial(fn, *args, **kwargs))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await future
        raise

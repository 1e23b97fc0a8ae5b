"""``run_sync``: drive dsh's async API from a plain script, on one event loop per thread.

Each call runs its awaitable to completion on the calling thread's own
:class:`asyncio.Runner`, kept open between calls, so objects made by one call (a store, a
model's connection pool, an agent holding its lease) are still usable by the next. The
runner closes when the interpreter exits.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from dsh.errors import UsageError

T = TypeVar("T")

_local = threading.local()


def _runner() -> asyncio.Runner:
    runner: asyncio.Runner | None = getattr(_local, "runner", None)
    if runner is None:
        runner = asyncio.Runner()
        _local.runner = runner
        atexit.register(runner.close)
    return runner


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion and return its result (``UsageError`` inside a running loop).

    ``agent = run_sync(Agent.create(store, model=model))`` then
    ``run_sync(agent.run_turn("..."))`` — or ``agent.run_sync("...")``.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _runner().run(coro)
    coro.close()
    raise UsageError("run_sync was called inside a running event loop: await the coroutine instead")

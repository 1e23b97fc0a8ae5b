"""One running attempt per activity on a worker: a retry takes over from the attempt before it.

Temporal retries an activity whose heartbeat timed out, but the timed-out attempt may still
run on a living worker (its heartbeats were late under load; the worker was never told),
holding the session's store lease: every retry elsewhere then waits for it and fails
``SessionBusyError``. So each attempt is registered by its activity (workflow id, run id,
activity id), and a retry of the same activity on the same worker first cancels the
earlier attempt and waits for it to end — it releases its lease as it unwinds — before it
takes the lease itself: the two never run side by side and the retry gets the lease.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

T = TypeVar("T")

TAKE_OVER_WAIT: Final = 15.0
"""Seconds a retry waits for the attempt it cancelled to end (as long as for a lease)."""

Key = tuple[str, str, str]


def activity_key(info: activity.Info) -> Key:
    """What every attempt of one activity shares: its workflow, run and activity id."""
    return (info.workflow_id or "", info.workflow_run_id or "", info.activity_id)


class Attempts:
    """The running attempt of each activity on one worker."""

    def __init__(self) -> None:
        self._running: dict[Key, asyncio.Task[object]] = {}

    async def sole(self, work: Coroutine[Any, Any, T]) -> T:
        """``work`` as the one running attempt of the current activity (see the module)."""
        key = activity_key(activity.info())
        me = asyncio.current_task()
        assert me is not None
        earlier = self._running.get(key)
        if earlier is not None and earlier is not me and not earlier.done():
            earlier.cancel("a retry of this activity took over")
            try:
                done, _ = await asyncio.wait({earlier}, timeout=TAKE_OVER_WAIT)
            except BaseException:  # this attempt was cancelled too: ``work`` never runs
                work.close()
                raise
            if not done:
                work.close()  # never to run
                message = f"an earlier attempt of activity {key[2]} of {key[0]} does not end"
                raise ApplicationError(message, type="EarlierAttemptRunning")
        self._running[key] = me
        try:
            return await work
        finally:
            if self._running.get(key) is me:
                del self._running[key]

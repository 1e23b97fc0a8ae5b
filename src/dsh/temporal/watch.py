"""Watching a submitted turn's run for lost workers: an activity attempt that timed out on its heartbeat.

A worker that dies (or stops heartbeating) mid-activity is noticed by the server after the
activity's heartbeat timeout (``HEARTBEAT_TIMEOUT``, 3 s); it then schedules the next attempt,
which any worker of the queue takes. The run's description lists that pending activity with
its last failure, a heartbeat timeout: :func:`lost_workers` reads the description once a
second and reports each such attempt once. Pollers are not used: the server keeps listing a
dead worker's poller for minutes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Final

from temporalio.api.enums.v1 import TimeoutType
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

WATCH_EVERY: Final = 1.0


async def lost_workers(handle: WorkflowHandle[Any, Any], every: float = WATCH_EVERY) -> AsyncIterator[str]:
    """The type of each activity of ``handle``'s run whose worker was lost (its attempt timed
    out on its heartbeat), once per attempt, while the run runs."""
    seen: set[tuple[str, int]] = set()
    while True:
        try:
            described = await handle.describe()
        except RPCError:
            return
        if described.status != WorkflowExecutionStatus.RUNNING:
            return
        for pending in described.raw_description.pending_activities:
            failure = pending.last_failure
            if not failure.HasField("timeout_failure_info"):
                continue
            if failure.timeout_failure_info.timeout_type != TimeoutType.TIMEOUT_TYPE_HEARTBEAT:
                continue
            key = (pending.activity_id, pending.attempt)
            if key not in seen:
                seen.add(key)
                yield pending.activity_type.name
        await asyncio.sleep(every)

"""Watching a submitted turn's run for lost workers: an activity attempt that timed out on its heartbeat.

A worker that dies (or stops heartbeating) mid-activity is noticed by the server after the
activity's heartbeat timeout (``HEARTBEAT_TIMEOUT``, 3 s); it then schedules the next attempt,
which any worker of the queue takes. Two places show such an attempt:

- while it is pending, the run's description lists it with its last failure, a heartbeat
  timeout: :meth:`LostWorkers.watch` reads the description once a second;
- once it has started and ended, the history holds its ``ActivityTaskStarted`` event with that
  last failure. A retry that finishes between two descriptions is only there:
  :meth:`LostWorkers.settle` reads the history when the run has ended.

Each attempt is reported once, whichever saw it first. Pollers are not used: the server keeps
listing a dead worker's poller for minutes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Final

from temporalio.api.enums.v1 import TimeoutType
from temporalio.api.failure.v1 import Failure
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

WATCH_EVERY: Final = 1.0


def _heartbeat_timeout(failure: Failure) -> bool:
    return (
        failure.HasField("timeout_failure_info")
        and failure.timeout_failure_info.timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT
    )


class LostWorkers:
    """The activity attempts of ``handle``'s run whose worker was lost, each reported once."""

    def __init__(self, handle: WorkflowHandle[Any, Any], every: float = WATCH_EVERY) -> None:
        self._handle = handle
        self._every = every
        self._seen: set[tuple[str, int]] = set()

    def _first(self, activity_id: str, attempt: int) -> bool:
        key = (activity_id, attempt)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    async def watch(self) -> AsyncIterator[str]:
        """The type of each pending activity whose last attempt timed out on its heartbeat,
        while the run runs."""
        while True:
            try:
                described = await self._handle.describe()
            except RPCError:
                return
            if described.status != WorkflowExecutionStatus.RUNNING:
                return
            for pending in described.raw_description.pending_activities:
                lost = _heartbeat_timeout(pending.last_failure)
                if lost and self._first(pending.activity_id, pending.attempt):
                    yield pending.activity_type.name
            await asyncio.sleep(self._every)

    async def settle(self) -> list[str]:
        """The types of the lost attempts :meth:`watch` did not report, read from the history of
        the ended run (an attempt after a lost one that finished before the next description)."""
        scheduled: dict[int, tuple[str, str]] = {}
        lost: list[str] = []
        try:
            async for event in self._handle.fetch_history_events():
                if event.HasField("activity_task_scheduled_event_attributes"):
                    attrs = event.activity_task_scheduled_event_attributes
                    scheduled[event.event_id] = (attrs.activity_id, attrs.activity_type.name)
                elif event.HasField("activity_task_started_event_attributes"):
                    started = event.activity_task_started_event_attributes
                    if started.scheduled_event_id not in scheduled:
                        continue
                    activity_id, name = scheduled[started.scheduled_event_id]
                    # the started event is the attempt that ran; the one before it was lost
                    if _heartbeat_timeout(started.last_failure) and self._first(activity_id, started.attempt):
                        lost.append(name)
        except RPCError:
            return lost
        return lost

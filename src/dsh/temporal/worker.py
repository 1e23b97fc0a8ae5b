"""A dsh worker: runs turn workflows and their activities for one task queue over one store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from temporalio.client import Client
from temporalio.worker import Worker as TemporalWorker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from dsh.loop import AgentConfig
from dsh.loop.setup import ToolsArg
from dsh.model import Model
from dsh.store import EventStore
from dsh.temporal.activities import TurnActivities
from dsh.temporal.connect import connect
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.sharing import check_queue, store_identity, worker_identity
from dsh.temporal.steering import steered
from dsh.temporal.workflow import TurnWorkflow

GRACEFUL_SHUTDOWN: Final = timedelta(seconds=30)
"""How long a stopping worker lets its running activities finish before it cancels them."""
STICKY_TIMEOUT: Final = timedelta(seconds=2)
"""How long a workflow task waits for the worker that ran the workflow last (its cache)
before any worker of the queue takes it: a dead worker's turns move on after this."""

SANDBOX: Final = SandboxedWorkflowRunner(
    restrictions=SandboxRestrictions.default.with_passthrough_all_modules()
)
"""The workflow sandbox still checks each run for non-determinism (time, random, I/O), but takes
every module from the worker instead of re-importing it for each run: the workflow module
imports only the refs and the pure step budget, which hold no state a run could change."""


class Worker:
    """Runs :class:`~dsh.temporal.workflow.TurnWorkflow` and its activities.

    ``store``, ``model``, ``tools``, ``standard_tools`` and ``config`` are what
    ``Agent.create`` takes (the same rules): every activity attaches an agent made of them to
    the session it works on. ``client`` is a Temporal client or a ``HOST:PORT`` to connect
    to. :meth:`run` refuses a task queue whose workers use another store (``dsh.temporal.sharing``),
    then polls until ``stop`` is set (or it is cancelled), letting running activities finish
    for up to ``graceful_shutdown``.
    """

    def __init__(
        self,
        client: Client | str,
        *,
        task_queue: str,
        store: EventStore,
        model: Model,
        tools: ToolsArg = (),
        standard_tools: bool | None = None,
        config: AgentConfig | None = None,
        max_concurrent_activities: int = 10,
        max_concurrent_workflow_tasks: int = 10,
        graceful_shutdown: timedelta = GRACEFUL_SHUTDOWN,
    ) -> None:
        self._client = client
        self.task_queue = task_queue
        self.recipe = AgentRecipe.of(
            store, model=model, tools=tools, standard_tools=standard_tools, config=config
        )
        self._max_activities = max_concurrent_activities
        self._max_workflow_tasks = max_concurrent_workflow_tasks
        self._graceful = graceful_shutdown
        self.identity = worker_identity(store_identity(store))

    async def _connected(self) -> Client:
        if isinstance(self._client, str):
            self._client = await connect(self._client)
        return self._client

    async def run(self, stop: asyncio.Event | None = None, ready: Callable[[], None] | None = None) -> None:
        """Poll the task queue until ``stop`` is set; then shut down gracefully. ``ready`` is
        called once the worker polls (validated against the server and started): a stop that
        comes earlier waits until then, since shutting the Temporal core down in the middle of
        its start aborts the process."""
        client = await self._connected()
        await check_queue(client, self.task_queue, store_identity(self.recipe.store))
        activities = TurnActivities(steered(self.recipe, client, self.task_queue), client)
        worker = TemporalWorker(
            client,
            task_queue=self.task_queue,
            workflows=[TurnWorkflow],
            workflow_runner=SANDBOX,
            activities=activities.all(),
            identity=self.identity,
            max_concurrent_activities=self._max_activities,
            max_concurrent_workflow_tasks=self._max_workflow_tasks,
            graceful_shutdown_timeout=self._graceful,
            sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
        )
        try:
            async with worker:
                while not worker.is_running:  # noqa: ASYNC110 (temporalio has no event for its start)
                    await asyncio.sleep(0.01)
                if ready is not None:
                    ready()
                await (stop or asyncio.Event()).wait()
        finally:
            if activities.jobs is not None:  # the background jobs end with their worker
                await asyncio.shield(activities.jobs.aclose())

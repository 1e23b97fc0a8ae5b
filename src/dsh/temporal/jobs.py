"""Background jobs on Temporal: a worker-level job table per session, outliving the activity.

Each activity attaches a fresh agent that lives for one piece of the turn, and an agent
kills its jobs when it closes. So a worker keeps one :class:`~dsh.tools.jobs.JobTable` per
session it ran a tool of (made as the loop makes one, :func:`dsh.loop.job_notices.job_table`)
and lends it to every agent it attaches to that session: a job ``bash`` started with
``run_in_background`` runs on after its activity, ``job_output`` / ``job_kill`` of a later
activity on the same worker find it, and when it settles its completion notice (the loop's
:func:`dsh.tools.jobs.notice`, redacted as the agent redacts it) is sent to the session
with the ``wake`` signal (:func:`dsh.temporal.waking.send`): a running turn logs it before
its next step (``next-step``), an idle session gets a woken turn for it (``next-turn``) —
the in-process agent's delivery. The worker kills the jobs still running when it stops.
"""

from __future__ import annotations

import asyncio

from temporalio.client import Client

from dsh.loop import Agent
from dsh.loop.job_notices import JobNotices, job_table
from dsh.store import EventStore
from dsh.temporal.waking import send
from dsh.tools.jobs import Job, JobTable, notice
from dsh.tools.redaction import Redaction


class WorkerJobs:
    """The job tables of the sessions one worker runs (see the module docstring)."""

    def __init__(self, client: Client, store: EventStore) -> None:
        self._client = client
        self._store = store
        self._tables: dict[str, JobTable] = {}
        self._sending: set[asyncio.Task[None]] = set()

    def lend(self, agent: Agent, task_queue: str) -> None:
        """Give ``agent`` its session's worker-level job table (made on first use)."""
        table = self._tables.get(agent.id)
        if table is None:
            session_id, redaction = agent.id, agent.redaction

            def settled(job: Job) -> None:
                self._notify(session_id, redaction, job, task_queue)

            table = self._tables[agent.id] = job_table(agent, settled)
        agent.jobs = JobNotices(agent, table)

    def _notify(self, session_id: str, redaction: Redaction, job: Job, task_queue: str) -> None:
        message = redaction.message(notice(job))
        work = send(self._client, self._store, session_id, message, task_queue, next_turn=False)
        task = asyncio.get_running_loop().create_task(work, name=f"notice {job.id}")
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def aclose(self) -> None:
        """Kill every job still running (no notices after this) and finish the notices sent."""
        tables, self._tables = list(self._tables.values()), {}
        for table in tables:
            await table.aclose()
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)

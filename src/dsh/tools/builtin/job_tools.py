"""``job_output``, ``job_kill`` and ``job_list``: the model's handle on its background jobs.

They act on the calling session's :class:`~dsh.tools.jobs.JobTable` (``ToolContext.jobs``)
with the original's texts: ``job_output`` answers what a job wrote since the last read and
ends with its ``[status: …]`` (waiting first with ``wait: true``), ``job_kill`` asks a
running job to stop, ``job_list`` lists every job of the session.
"""

from __future__ import annotations

import asyncio

from pydantic import Field

from dsh.jsonx import dumps
from dsh.tools.base import Tool, ToolContext, ToolOutput
from dsh.tools.codes import tool_error
from dsh.tools.jobs import Job, JobTable
from dsh.tools.process_group import wait_for_event
from dsh.tools.schema import Number, ToolArgs

DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000
_JOB_ID = "The id the tool that started the job answered with (e.g. bash-1)."


def _job(ctx: ToolContext, job_id: str) -> Job:
    if not job_id.strip():
        raise tool_error(f"invalid job_id: expected a non-empty string, got {dumps(job_id).decode()}")
    job = ctx.jobs.get(job_id) if ctx.jobs is not None else None
    if job is None:
        raise tool_error(f"unknown job {job_id}")
    return job


class JobOutputArgs(ToolArgs):
    job_id: str = Field(description=_JOB_ID)
    wait: bool | None = Field(
        None,
        description="Wait until the job has finished (or the wait times out, leaving it running) "
        "before answering.",
    )
    timeout_ms: Number | None = Field(
        None, description="With wait: the longest wait in milliseconds (default 30000, at most 600000)."
    )


class JobOutputTool(Tool[JobOutputArgs]):
    """Read a background job's new output and status."""

    name = "job_output"
    description = (
        "Read a background job: what it wrote since your last read of it (stdout, then stderr "
        "under a `[stderr]` line), ending with a `[status: ...]` line. Answers at once unless "
        "`wait: true`, which first waits for the job to finish, up to `timeout_ms`."
    )
    args_model = JobOutputArgs

    def __init__(self, *, default_wait_ms: int = DEFAULT_WAIT_MS, max_wait_ms: int = MAX_WAIT_MS) -> None:
        self.default_wait_ms = default_wait_ms
        self.max_wait_ms = max_wait_ms

    async def call(self, args: JobOutputArgs, ctx: ToolContext) -> ToolOutput:
        job = _job(ctx, args.job_id)
        if args.timeout_ms is not None and not args.timeout_ms > 0:
            got = dumps(args.timeout_ms).decode()
            raise tool_error(f"invalid timeout_ms: expected a positive number, got {got}")
        if args.wait and not job.terminal:
            wait_ms = min(args.timeout_ms or self.default_wait_ms, self.max_wait_ms)
            await wait_for_event(job.done, wait_ms / 1000)
        await asyncio.sleep(0)  # output the job's pipes already delivered is read with it
        return ToolOutput.text(job.read())


class JobKillArgs(ToolArgs):
    job_id: str = Field(description=_JOB_ID)
    reason: str | None = Field(None, description="Why the job is stopped (optional, a few words).")


class JobKillTool(Tool[JobKillArgs]):
    """Stop a running background job."""

    name = "job_kill"
    description = (
        "Stop a running background job by its id. Answers at once; the job's status is "
        "`stopping` until its processes have ended, then `killed`."
    )
    args_model = JobKillArgs

    async def call(self, args: JobKillArgs, ctx: ToolContext) -> ToolOutput:
        job = _job(ctx, args.job_id)
        if job.terminal:
            return ToolOutput.text(f"job {job.id} had already finished {job.status_text()}")
        job.request_kill(args.reason)
        return ToolOutput.text(f"requested cancellation of job {job.id}")


class JobListArgs(ToolArgs):
    pass


class JobListTool(Tool[JobListArgs]):
    """List this session's background jobs."""

    name = "job_list"
    description = "List the background jobs started in this session, running or finished, with their status."
    args_model = JobListArgs
    concurrency_safe = True

    async def call(self, args: JobListArgs, ctx: ToolContext) -> ToolOutput:
        table = ctx.jobs if ctx.jobs is not None else JobTable()
        return ToolOutput.text(table.listing())

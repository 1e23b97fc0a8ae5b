"""Background jobs of one session: ids, statuses, unread output, the texts the job tools answer.

A :class:`JobTable` belongs to one session (``ToolContext.jobs``; the ``Agent`` owns one).
A job has a per-kind id (``bash-1``, ``bash-2``…), a label (a bash job's: its command), a
status — ``running``, ``stopping`` (a kill was asked for), then one of the terminal
``completed``, ``killed``, ``failed`` — with an optional detail (``exit code: N``,
``signal: SIG…``, ``killed before exit``), and its output not read yet. At most
:attr:`JobTable.limit` jobs (default 10) run or stop at once; :meth:`JobTable.admission`
names the refusal past that (checked before the job's work starts: nothing runs). A job's
start is answered once its work runs (:attr:`Job.started`: the process spawned), as the
original answers once its producer started. When a job settles the table's ``on_settled``
listener is told (the agent turns it into the completion notice, :func:`notice`) — unless
``job_kill`` stopped it (:attr:`Job.reported`: the original sends no notice for a killed
job). :meth:`JobTable.aclose` kills whatever still runs: a job never outlives
the agent that started it.

Every text here is the original's (``upstream-tools-hooks-sandbox.md`` §2, §7).
"""

from __future__ import annotations

import asyncio
import codecs
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Literal

from dsh.events.messages import JOB_NOTICE_PLUGIN, Message, text_block
from dsh.ids import new_message_id

JobStatus = Literal["running", "stopping", "completed", "killed", "failed"]
TERMINAL: Final[frozenset[str]] = frozenset({"completed", "killed", "failed"})
SUMMARY_MAX: Final = 120
MAX_UNREAD_BYTES: Final = 1_000_000
"""Unread output a job keeps per stream; older bytes are dropped (and the next read says so)."""

NO_JOBS: Final = "(no background jobs)"
DEFAULT_JOB_LIMIT: Final = 10
"""Jobs one session may have running or stopping at once (the original's default)."""
DROPPED: Final = "[some output was dropped from memory; full output: (unavailable)]"


def runner_failed(mode: str) -> str:
    """The marker of a job whose sandbox runner could not start (the command never ran)."""
    return (
        f"[sandbox: the sandbox runner itself failed under {mode} mode — the command did not run; "
        "this is a sandbox problem, not a command failure]"
    )


class Unread:
    """One output stream's bytes not read yet (at most ``cap``; older ones are dropped)."""

    __slots__ = ("_buf", "_decoder", "cap", "dropped")

    def __init__(self, cap: int = MAX_UNREAD_BYTES) -> None:
        self.cap = cap
        self.dropped = False
        self._buf = bytearray()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) > self.cap:
            del self._buf[: len(self._buf) - self.cap]
            self.dropped = True

    def take(self, *, final: bool = False) -> str:
        """The unread bytes as text (an incomplete UTF-8 tail waits for the next read unless ``final``)."""
        data, self._buf = bytes(self._buf), bytearray()
        return self._decoder.decode(data, final=final)


class Job:
    """One background job; its runner feeds :attr:`stdout`/:attr:`stderr` and calls :meth:`settle`."""

    def __init__(self, job_id: str, kind: str, label: str, table: JobTable) -> None:
        self.id = job_id
        self.kind = kind
        self.label = label
        self.status: JobStatus = "running"
        self.detail: str | None = None
        self.stdout = Unread()
        self.stderr = Unread()
        self.runner_failed_mode: str | None = None
        """Set when the sandbox runner itself failed to start (under that mode)."""
        self.kill_reason: str | None = None
        self.reported = False
        """The job's end needs no completion notice (``job_kill`` stopped it: the original's rule)."""
        self.started = asyncio.Event()
        """Set once the work is running (its process spawned) or has ended without running."""
        self.done = asyncio.Event()
        self.stop: Callable[[], None] | None = None
        """Set by the runner: asks the work to stop (``job_kill``)."""
        self.task: asyncio.Task[None] | None = None
        self._table = table

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def kill_requested(self) -> bool:
        """``job_kill`` asked this job to stop and it has not ended yet."""
        return self.status == "stopping"

    def status_text(self) -> str:
        """``[status: S]`` or ``[status: S, DETAIL]``."""
        return f"[status: {self.status}{', ' + self.detail if self.detail else ''}]"

    def request_kill(self, reason: str | None) -> None:
        """``stopping`` until the work actually ends (then the runner settles it ``killed``);
        reported: its end sends no completion notice (the caller asked for it)."""
        self.status = "stopping"
        self.reported = True
        self.kill_reason = reason
        if self.stop is not None:
            self.stop()

    def settle(self, status: JobStatus, detail: str | None) -> None:
        """The job's end: its status, the listener told, waiters released (only the first call counts)."""
        if self.terminal:
            return
        self.status, self.detail = status, detail
        listener = self._table.on_settled
        if listener is not None and not self.reported:
            listener(self)
        self.started.set()
        self.done.set()

    def read(self) -> str:
        """``job_output``'s text: what arrived since the last read, the notices, the status."""
        final = self.terminal
        out, err = self.stdout.take(final=final), self.stderr.take(final=final)
        body = out
        if err:
            if body and not body.endswith("\n"):
                body += "\n"
            body += "[stderr]\n" + err
        body = body or "(no new output)"
        lines: list[str] = []
        if self.stdout.dropped or self.stderr.dropped:
            lines.append(DROPPED)
            self.stdout.dropped = self.stderr.dropped = False
        if self.runner_failed_mode is not None:
            lines.append(runner_failed(self.runner_failed_mode))
        lines.append(self.status_text())
        return body + ("" if body.endswith("\n") else "\n") + "\n".join(lines)

    def list_line(self) -> str:
        """One ``job_list`` line."""
        return f"{self.id} [{self.kind}] {self.status} \u2014 {self.label}"


class JobTable:
    """The background jobs of one session, in start order, with a per-kind id counter."""

    def __init__(
        self,
        on_settled: Callable[[Job], None] | None = None,
        *,
        started: Iterable[str] = (),
        limit: int = DEFAULT_JOB_LIMIT,
    ) -> None:
        self.on_settled = on_settled
        self.limit = limit
        """Told once per job when it settles (before anyone waiting on it is released)."""
        self._jobs: dict[str, Job] = {}
        self._counters: dict[str, int] = {}
        for job_id in started:  # ids an earlier process gave out in this session: never reused
            kind, _, n = job_id.rpartition("-")
            if kind and n.isdigit():
                self._counters[kind] = max(self._counters.get(kind, 0), int(n))
        self.closed = False

    def admission(self) -> str | None:
        """Why a new job may not start now (``None``: it may): :attr:`limit` jobs already run
        or stop; a finished job frees its place."""
        if sum(1 for j in self._jobs.values() if not j.terminal) < self.limit:
            return None
        return (
            f"background job limit reached for this owner (limit: {self.limit}); use job_kill to stop "
            "an unneeded job, wait for it to finish, then retry"
        )

    def new(self, kind: str, label: str) -> Job:
        """A running job with the next ``<kind>-<n>`` id."""
        n = self._counters.get(kind, 0) + 1
        self._counters[kind] = n
        job = Job(f"{kind}-{n}", kind, label, self)
        self._jobs[job.id] = job
        return job

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def jobs(self) -> list[Job]:
        return list(self._jobs.values())

    def listing(self) -> str:
        """``job_list``'s text."""
        return "\n".join(j.list_line() for j in self._jobs.values()) or NO_JOBS

    async def aclose(self) -> None:
        """Kill every job still running and wait until its work has ended; no notices after this."""
        self.closed = True
        self.on_settled = None
        tasks = [j.task for j in self._jobs.values() if j.task is not None and not j.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def started_text(job_id: str) -> str:
    """What the call that started a job answers."""
    return f"started background job {job_id}"


_STARTED = re.compile(r"started background job (\S+)")


def started_ids(texts: Sequence[str]) -> list[str]:
    """The job ids a session's tool results (``texts``) say were started."""
    return [m.group(1) for t in texts if (m := _STARTED.fullmatch(t)) is not None]


def notice_summary(job: Job) -> str:
    """``<kind> <label> [status: …]``, at most 120 characters (else cut to 119 and ``…``)."""
    line = f"{job.kind} {job.label} {job.status_text()}"
    return line if len(line) <= SUMMARY_MAX else line[: SUMMARY_MAX - 1] + "\u2026"


def notice(job: Job) -> Message:
    """The completion notice the job's owner gets."""
    text = (
        f"background job {job.id} ({job.kind}: {job.label}) finished {job.status_text()}. "
        "Read its output with job_output."
    )
    return {
        "content": [text_block(text)],
        "source": {
            "kind": "plugin",
            "plugin": JOB_NOTICE_PLUGIN,
            "form": "notice",
            "summary": notice_summary(job),
        },
        "role": "user",
        "id": new_message_id(),
    }

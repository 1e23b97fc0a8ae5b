"""Completion notices of an agent's background jobs, delivered through its inbox.

When a job of the agent's :class:`~dsh.tools.jobs.JobTable` settles, the agent gets the
original's notice (:func:`dsh.tools.jobs.notice`): at its next step when it is running a
turn (``next-step``), else as a new turn that wakes it (``next-turn``) — at most
:data:`MAX_WAKES` such wakes between two user prompts; past that the notice waits, as a
``next-step`` message, for the next turn. Under a replay (a model that is a
:class:`~dsh.model.DeliveryOrder`) the notice is held until the agent is where the
recording received it, so it is claimed by the same step as there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from dsh.events.messages import JOB_NOTICE_SENDER, Message, joined_text
from dsh.events.vocabulary import TOOL_RESULT
from dsh.loop.inbox import senders
from dsh.loop.state import NoticeState
from dsh.loop.weak import weak_method
from dsh.model import DeliveryOrder
from dsh.tools.jobs import Job, JobTable, notice, started_ids

MAX_WAKES: Final = 3


def _result_texts(agent: NoticeState) -> list[str]:
    """The text of every tool result the session's model has seen (a resumed session's jobs
    ended with the process that ran them, a fork child's belong to its parent: their ids
    stay taken)."""
    out: list[str] = []
    for event in agent.session.of_type(TOOL_RESULT):
        if isinstance(event.data, dict):
            for block in event.data.get("message", {}).get("content", []):
                if isinstance(block, dict) and block.get("type") == "tool-result":
                    out.append(joined_text(block.get("content", [])))
    return out


def job_table(agent: NoticeState, on_settled: Callable[[Job], None]) -> JobTable:
    """A job table for ``agent``'s session: job ids after the ones its log gave out, its
    config's admission limit; ``on_settled`` is told when a job settles."""
    return JobTable(
        on_settled=on_settled, started=started_ids(_result_texts(agent)), limit=agent.config.max_jobs
    )


class JobNotices:
    """One agent's job table and the delivery of its completion notices.

    ``table``: a table someone else owns and delivers the notices of (a Temporal worker's,
    which outlives the agent of one activity): the agent uses it, and :meth:`aclose` leaves
    its jobs running."""

    def __init__(self, agent: NoticeState, table: JobTable | None = None) -> None:
        self._agent = agent
        self._owned = table is None
        self.table = job_table(agent, weak_method(self._settled)) if table is None else table
        self.wakes = 0
        self._pending: set[asyncio.Task[None]] = set()

    def user_turn(self) -> None:
        """A user prompt opened a turn: job notices may wake the agent again."""
        self.wakes = 0

    def _settled(self, job: Job) -> None:
        message = self._agent.redaction.message(notice(job))
        order = self._agent.model
        if not isinstance(order, DeliveryOrder):
            self._deliver(message)
            return
        task = asyncio.get_running_loop().create_task(self._in_order(order, message), name=f"notice {job.id}")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _in_order(self, order: DeliveryOrder, message: Message) -> None:
        agent = self._agent
        session = agent.session
        await order.before_delivery(
            JOB_NOTICE_SENDER, agent.id, lambda: senders(session.own_events), agent.progress
        )
        self._deliver(message)

    def _deliver(self, message: Message) -> None:
        agent = self._agent
        if agent.closed:
            return
        if agent.busy:
            agent.deliver(message, "next-step")
        elif self.wakes < MAX_WAKES:
            self.wakes += 1
            agent.deliver(message, "next-turn", wake=True)
        else:
            agent.deliver(message, "next-step")

    async def aclose(self) -> None:
        """Kill the jobs still running (no notices from here on; a table it does not own is
        left running) and drop undelivered notices."""
        if self._owned:
            await self.table.aclose()
        pending, self._pending = list(self._pending), set()
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

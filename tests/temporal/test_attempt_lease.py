"""A lease held by an activity attempt is given up when a retry of the same activity comes.

The issue (#44): under load a worker's heartbeat was late, the server timed the attempt out
and retried it, but the attempt went on running on the living worker and kept the
session's lease: every later attempt then failed ``SessionBusyError``. Here the attempts are
driven directly (``ActivityEnvironment``, one worker's ``TurnActivities``): the first
``model_step`` hangs in its model call and is never told it timed out; a retry of the same
activity (same workflow and activity id, attempt 2) must end it, run the step, and leave
the session free.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

from temporalio.testing import ActivityEnvironment

from dsh.loop import AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store import EventStore
from dsh.store.url import open_store
from dsh.temporal.activities import TurnActivities
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.refs import StepInput, TurnInput
from dsh.temporal.submit import _prepare
from dsh.testing import stream_reply
from tests.patience import patience, until
from tests.temporal.conftest import Model
from tests.temporal.helpers import by_count, slow_reply


async def test_a_retry_takes_over_the_lease_of_its_timed_out_attempt(
    store: EventStore, pg_store: str, model: Model
) -> None:
    model.script = by_count(slow_reply, lambda: stream_reply(text=["done"]))
    asked = len(model.server.requests)
    sid, seq, prompt = await _prepare(store, "hello", None, ".")
    other = open_store(pg_store)  # another worker's handle on the same store
    async with OpenAICompatModel(base_url=model.server.base_url, api_key="k", model="m") as m:
        activities = TurnActivities(AgentRecipe.of(store, model=m, config=AgentConfig(model="m")))
        first = ActivityEnvironment()
        begun = await first.run(activities.begin_turn, TurnInput(sid, seq, prompt))
        step = StepInput(sid, seq, begun.turn, 1, prompt)
        stale = asyncio.ensure_future(first.run(activities.model_step, step))
        try:
            await until(lambda: len(model.server.requests) > asked, "the first attempt asks the model")
            retry = ActivityEnvironment()
            retry.info = replace(first.info, attempt=2)
            settled = await asyncio.wait_for(retry.run(activities.model_step, step), patience(60))
            assert settled.failure_code is None, settled.failure_message
            lease = await other.lease(sid)  # SessionBusyError while the stale attempt holds it
            await lease.release()
            assert stale.done(), "the timed-out attempt still runs beside its retry"
        finally:
            stale.cancel()
            with contextlib.suppress(BaseException):
                await stale
            await other.close()

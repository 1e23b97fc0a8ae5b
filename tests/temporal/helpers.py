"""Shared pieces of the Temporal tests: scripted replies, the lease holder, the stored turn."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from dsh.errors import SessionBusyError
from dsh.events import Event
from dsh.events.vocabulary import TOOL_RESULT, TURN_END
from dsh.store import EventStore
from dsh.testing import Faults, RecordedRequest, Response, WireToolCall, stream_reply
from tests.patience import patience


def bash_call(call_id: str, command: str) -> Response:
    arguments = f'{{"command": "{command}", "description": "test"}}'
    return stream_reply(tool_calls=[WireToolCall.split(call_id, "bash", arguments, 2)])


def slow_reply() -> Response:
    """A call that streams one event, then nothing until the client goes away."""
    return stream_reply(text=["never", " finished"], faults=Faults(stall_after=2, stall_seconds=None))


def by_count(*replies: Callable[[], Response]) -> Callable[[RecordedRequest], Response]:
    """The n-th request from now on gets ``replies[n]``; past the end, the last one."""
    served = [0]

    def answer(request: RecordedRequest) -> Response:
        n, served[0] = served[0], served[0] + 1
        return replies[min(n, len(replies) - 1)]()

    return answer


async def holder_pid(store: EventStore, session_id: str, within: float = 20.0) -> int:
    """The pid holding the session's lease (the worker running its activity now)."""
    deadline = time.monotonic() + patience(within)
    while time.monotonic() < deadline:
        try:
            lease = await store.lease(session_id)
        except SessionBusyError as exc:
            if exc.pid is not None:
                return exc.pid
        else:
            await lease.release()
        await asyncio.sleep(0.1)
    raise AssertionError(f"nobody took session {session_id}'s lease")


def results(events: Sequence[Event]) -> list[Event]:
    return [e for e in events if e.type == TOOL_RESULT]


def last_end(events: Sequence[Event]) -> str | None:
    ends = [e for e in events if e.type == TURN_END]
    return str(ends[-1].data["reason"]["kind"]) if ends else None

"""A lease is given back even when its holder is cancelled while it lets go.

A Temporal activity cancelled (a heartbeat timeout, a retry taking over) unwinds through its
lease's ``release()``; a second cancel there must not stop the backend's release half-way
(PostgreSQL: the unlock), or the session stays held by a living process.
"""

from __future__ import annotations

import asyncio
import contextlib

from dsh.store.base import LeaseHolder
from dsh.store.lease import LeaseTable
from tests.patience import patience


class SlowRelease:
    """A lease backend whose release takes until :attr:`go` is set."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.go = asyncio.Event()
        self.releasing = asyncio.Event()

    async def try_acquire(self, session_id: str, me: LeaseHolder) -> str | None:
        if session_id in self.held:
            return None
        self.held.add(session_id)
        return session_id

    async def holder(self, session_id: str) -> LeaseHolder | None:
        return None

    async def release(self, lock: str) -> None:
        self.releasing.set()
        await self.go.wait()
        self.held.discard(lock)

    async def give_up(self, session_id: str) -> None:
        return None


async def test_a_release_cancelled_half_way_still_frees_the_session() -> None:
    backend = SlowRelease()
    table = LeaseTable(backend)
    lease = await table.acquire("s")
    releasing = asyncio.ensure_future(lease.release())
    await backend.releasing.wait()
    releasing.cancel()  # the holder is cancelled while it lets go
    with contextlib.suppress(asyncio.CancelledError):
        await releasing
    backend.go.set()
    again = await table.acquire("s", wait=patience(10))  # SessionBusyError if the release was cut short
    await again.release()
    assert backend.held == set()

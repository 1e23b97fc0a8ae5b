"""Woken turns: an agent runs turns by itself while its inbox holds work (notices, relays).

One driver task per agent runs a turn for the inbox's work after any turn running now, each
in a task of its own so :meth:`Waker.interrupt` stops only it; when the work runs out the
agent's :class:`Activation` (a continuable child's settlement) is awaited and told.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence

from dsh.events import Event
from dsh.events.payloads import turn_end_of
from dsh.loop.result import TurnResult
from dsh.loop.state import WakeState

log = logging.getLogger("dsh.loop")


def closed_turn(session_id: str, own_events: Sequence[Event]) -> TurnResult:
    """The result of the last turn the log closed."""
    for event in reversed(own_events):
        end = turn_end_of(event)
        if end is not None:
            reason = end.get("reason")
            return TurnResult(session_id, end["turn"], reason.copy() if reason else {"kind": "error"}, "")
    return TurnResult(session_id, 0, {"kind": "error"}, "")


class Waker:
    """One agent's driver of woken turns; ``run`` runs one turn for the inbox's work under ``lock``."""

    def __init__(
        self, agent: WakeState, lock: asyncio.Lock, run: Callable[[], Coroutine[object, object, TurnResult]]
    ) -> None:
        self._agent = agent
        self._lock = lock
        self._run = run
        self._driver: asyncio.Task[None] | None = None
        self._turn: asyncio.Task[TurnResult] | None = None

    @property
    def pending(self) -> bool:
        """A woken turn is due or running."""
        return self._driver is not None and not self._driver.done()

    def wake(self) -> None:
        if self.pending:
            return
        self._driver = asyncio.get_running_loop().create_task(self._drive(), name=f"wake {self._agent.id}")

    async def until_idle(self) -> None:
        while self._driver is not None and not self._driver.done():
            await asyncio.wait([self._driver])

    def interrupt(self) -> bool:
        turn = self._turn
        if turn is None or turn.done():
            return False
        turn.cancel()
        return True

    async def stop(self) -> None:
        """Cancel the driver (and so a woken turn still running) and wait for it."""
        driver, self._driver = self._driver, None
        if driver is not None and not driver.done():
            driver.cancel()
            await asyncio.gather(driver, return_exceptions=True)

    async def _drive(self) -> None:
        agent = self._agent
        last: TurnResult | None = None
        while True:
            async with self._lock:
                if agent.inbox.has_work:
                    last = await self._woken()
                    continue
            if agent.activation is None or last is None:
                return
            await agent.activation.before_idle(agent)
            if not agent.inbox.has_work:
                agent.activation.on_idle(agent, last)
                return

    async def _woken(self) -> TurnResult:
        """One turn for the inbox's work, in a task of its own so :meth:`interrupt` stops
        only it; a turn that raised is closed in the log and its end read back from there."""
        agent = self._agent
        turn = asyncio.get_running_loop().create_task(self._run(), name=f"turn {agent.id}")
        self._turn = turn
        try:
            return await turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not turn.cancelled() or (current is not None and current.cancelling()):
                raise
        except Exception:  # nobody awaits a woken turn: log it, the log has its turn/end
            log.exception("session %s: a woken turn raised", agent.id)
        finally:
            self._turn = None
        return closed_turn(agent.id, agent.session.own_events)

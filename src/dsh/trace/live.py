"""Live traces: a running session tree's spans sent to an OTLP endpoint as its turns end.

:class:`LiveTrace` listens to an agent's :class:`~dsh.loop.Feed`. Each ``turn/end`` (of the
root or of any subagent) schedules an export: the tree is read back from the store, planned
like ``dsh export otel`` plans it, and every closed span not sent before is sent. Span ids
are stable, so nothing is sent twice; :meth:`LiveTrace.aclose` sends what is left. A
collector that fails never fails the run: the first failure is reported through ``warn``
and later exports try again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from dsh.errors import DshError
from dsh.events import Event
from dsh.session.timeline import Timeline, TurnEnd
from dsh.store.base import EventStore
from dsh.store.deletion import descendants
from dsh.trace.export import send
from dsh.trace.plan import PlanOptions, plan_spans


class LiveTrace:
    """Exports the spans of the tree rooted at ``root`` while it runs (see the module doc)."""

    def __init__(
        self,
        store: EventStore,
        root: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        options: PlanOptions | None = None,
        warn: Callable[[str], None] = lambda _message: None,
        timeout: float = 3.0,
    ) -> None:
        self.store, self.root, self.url = store, root, url
        self.headers = dict(headers or {})
        self.options = options or PlanOptions()
        self.warn = warn
        self.timeout = timeout
        self.sent: set[str] = set()
        """Span ids the endpoint has taken."""
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[int]] = set()
        self._warned = False
        self._timeline = Timeline()

    def on_event(self, session_id: str, event: Event) -> None:
        """A :class:`~dsh.loop.Feed` event listener: a turn's end schedules an export."""
        if any(isinstance(item, TurnEnd) for item in self._timeline.feed(session_id, event)):
            task = asyncio.get_running_loop().create_task(self.flush())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def flush(self) -> int:
        """Send every closed span not sent yet; the number sent (0 when the endpoint failed)."""
        async with self._lock:
            ids = await descendants(self.store, self.root)
            sessions = {sid: await self.store.load(sid) for sid in ids}
            fresh = [
                s
                for s in plan_spans(sessions, self.root, self.options)
                if not s.open and s.span_id not in self.sent
            ]
            if not fresh:
                return 0
            try:
                await asyncio.to_thread(send, fresh, self.url, self.headers, timeout=self.timeout)
            except DshError as exc:
                if not self._warned:
                    self._warned = True
                    self.warn(f"{exc}; the run goes on, later turns are sent again")
                return 0
            self.sent.update(s.span_id for s in fresh)
            return len(fresh)

    async def aclose(self) -> None:
        """Wait for scheduled exports, then send what is left."""
        if self._tasks:
            await asyncio.gather(*self._tasks)
        await self.flush()

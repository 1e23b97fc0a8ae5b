"""uvicorn's h11 protocol with a head deadline and a cap per peer address.

uvicorn closes an idle keep-alive connection, but a client that sends part of a head and
then nothing (slowloris) keeps it forever. :func:`head_timeout_protocol` gives the protocol
class ``dsh ui`` serves with: the deadline is armed when a connection opens and after each
response, and disarmed when a whole request head has been parsed; when it passes, the
connection is closed and one line is logged. While armed the connection is idle in the
server's :class:`~dsh.peer_slots.PeerSlots`: a peer address over its cap has its
longest-idle connection closed for the new one, so idle connections cannot hold every
descriptor until their deadlines pass.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from dsh.http1 import ACCEPT_LOG_EVERY, Log, stderr_log
from dsh.peer_slots import PeerSlots, Slot


def quiet_loop_errors(loop: asyncio.AbstractEventLoop, log: Log = stderr_log) -> None:
    """Make the viewer loop's unhandled errors one line each, never a traceback; a failing
    ``accept()`` (out of file descriptors: asyncio retries it every second) at most one line
    per :data:`~dsh.http1.ACCEPT_LOG_EVERY` seconds."""
    last: dict[str, float] = {}

    def handler(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", "error"))
        exc = context.get("exception")
        now = time.monotonic()
        if message in last and now - last[message] < ACCEPT_LOG_EVERY:
            return
        last[message] = now
        reason = f" ({exc.strerror or exc})" if isinstance(exc, OSError) else f" ({exc!r})" if exc else ""
        log(" ".join(f"dsh ui: {message}{reason}".split())[:400])

    loop.set_exception_handler(handler)


def head_timeout_protocol(
    timeout: float, log: Log = stderr_log, *, peer_cap: int | None = None
) -> type[H11Protocol]:
    """An ``H11Protocol`` subclass closing a connection whose request head takes over ``timeout``
    s, its connections counted per peer address (``peer_cap``: the most one may hold, default
    :func:`~dsh.peer_slots.default_peer_cap`). One class per server: they share the count."""
    peers = PeerSlots(peer_cap, log=log, name="dsh ui")

    class HeadTimeoutProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _armed_for: Any = None
        _slot: Slot | None = None

        def _arm(self) -> None:
            self._disarm()
            self._armed_for = self.cycle
            self._deadline = self.loop.call_later(timeout, self._expired)
            if self._slot is not None:
                self._slot.wait()

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                peer = "%s:%d" % self.client if self.client else "?"  # noqa: UP031 - uvicorn's tuple
                log(f"dsh ui: closed the connection from {peer}: no complete request within {timeout:g} s")
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._slot = peers.open(self.client[0] if self.client else "?", transport.close)
            if self._slot is None:  # the address's connections are all busy: refused
                transport.close()
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._deadline is not None and self.cycle is not self._armed_for:
                self._disarm()  # a whole head arrived: the request is being answered
                if self._slot is not None:
                    self._slot.work()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._slot is not None:
                peers.closed(self._slot)
            super().connection_lost(exc)

    return HeadTimeoutProtocol

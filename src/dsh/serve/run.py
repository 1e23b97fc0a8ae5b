"""Running a ``dsh serve`` server until SIGINT / SIGTERM or ``POST /_dsh/shutdown``."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Protocol


class Stoppable(Protocol):
    """A server :func:`serve_until_stopped` runs: start it, wait for ``stopped``, close it."""

    stopped: asyncio.Event
    token: str
    """The per-run control token (``X-Dsh-Token``)."""

    @property
    def base_url(self) -> str:
        """Where the started server listens, e.g. ``http://127.0.0.1:8080``."""
        ...

    async def start(self) -> None:
        """Bind and start serving."""
        ...

    async def close(self) -> None:
        """Stop serving and release the socket."""
        ...


async def serve_until_stopped(server: Stoppable, banner: str) -> None:
    """Start ``server``, print ``banner`` and its base URL on stdout (then a line with the
    control token), wait for a stop, close it."""
    await server.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, server.stopped.set)
    sys.stdout.write(f"{banner} on {server.base_url}\n")
    sys.stdout.write(
        f"dsh serve: control token {server.token} (send it as X-Dsh-Token to /_dsh/report, /_dsh/shutdown)\n"
    )
    sys.stdout.flush()
    try:
        await server.stopped.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        await server.close()

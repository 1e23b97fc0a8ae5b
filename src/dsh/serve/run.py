"""Running a ``dsh serve`` server until SIGINT / SIGTERM or ``POST /_dsh/shutdown``."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Protocol


class Stoppable(Protocol):
    stopped: asyncio.Event

    @property
    def base_url(self) -> str: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...


async def serve_until_stopped(server: Stoppable, banner: str) -> None:
    """Start ``server``, print ``banner`` and its base URL on stdout, wait for a stop, close it."""
    await server.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, server.stopped.set)
    sys.stdout.write(f"{banner} on {server.base_url}\n")
    sys.stdout.flush()
    try:
        await server.stopped.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        await server.close()

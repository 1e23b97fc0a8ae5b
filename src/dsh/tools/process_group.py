"""Process-group helpers shared by everything that runs ``bash -c`` (the bash tool, hooks)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the whole process group (gone or not ours: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def wait_for_event(event: asyncio.Event, seconds: float) -> bool:
    """Wait at most ``seconds`` for ``event``; whether it is set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
    return event.is_set()

"""Process-group helpers shared by everything that runs ``bash -c`` (the bash tool, hooks)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Final

KILL_GRACE_S: Final = 3.0
"""Seconds between ``SIGTERM`` and ``SIGKILL`` when a command is stopped."""


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


def signal_name(number: int) -> str:
    """``SIGTERM`` for 15 (``signal N`` for a number Python does not name)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

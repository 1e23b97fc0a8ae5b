"""How long the suite waits for something that is meant to happen: one factor for every bound.

A test waits on the thing itself (a frame, a file, a row, a process's exit, a server's
death); the bound on such a wait is a hang guard that only decides how long a *broken* run
takes to fail, never whether a working one passes, so it is generous. Every such bound goes
through :func:`patience`, which multiplies it by ``$DSH_TEST_TIMEOUT_SCALE`` (default 1):
set it (``DSH_TEST_TIMEOUT_SCALE=3 make test``) on a machine known to be much slower, rather
than raising a number in a test.

No test asserts a latency or a ratio of timings: those are measurements and live under
``bench/``. A test may still check an order of magnitude that *is* the behaviour (a hook
whose child sleeps 600 s, killed by its 1 s timeout, ends under a patience(60) guard): the
bound from here, far from both ends. Lower bounds (a pause was really taken) are fine:
load only lengthens them.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

import httpx

SCALE_ENV = "DSH_TEST_TIMEOUT_SCALE"


def _scale() -> float:
    raw = os.environ.get(SCALE_ENV, "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        raise RuntimeError(f"{SCALE_ENV}={raw!r}: expected a positive number") from None
    if not value > 0:
        raise RuntimeError(f"{SCALE_ENV}={raw!r}: expected a positive number")
    return value


SCALE = _scale()


def patience(seconds: float) -> float:
    """``seconds`` of hang guard, scaled by ``$DSH_TEST_TIMEOUT_SCALE``."""
    return seconds * SCALE


async def until(
    holds: Callable[[], bool],
    what: str,
    *,
    within: float = 60.0,
    gone: Callable[[], str | None] | None = None,
    every: float = 0.02,
) -> None:
    """Poll ``holds`` until it is true. Fails when ``gone`` names a reason it never will be
    (the process that would make it true has exited), or after ``patience(within)`` s."""
    deadline = time.monotonic() + patience(within)
    while not holds():
        reason = gone() if gone is not None else None
        if reason is not None:
            raise AssertionError(f"{what}: never, {reason}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {patience(within):g} s")
        await asyncio.sleep(every)


def until_sync(
    holds: Callable[[], bool],
    what: str,
    *,
    within: float = 60.0,
    gone: Callable[[], str | None] | None = None,
    every: float = 0.02,
) -> None:
    """:func:`until` for synchronous tests."""
    deadline = time.monotonic() + patience(within)
    while not holds():
        reason = gone() if gone is not None else None
        if reason is not None:
            raise AssertionError(f"{what}: never, {reason}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {patience(within):g} s")
        time.sleep(every)


HTTP_TIMEOUT = patience(30.0)
"""httpx's per-request timeout in tests (a page a loaded machine renders slowly still comes)."""


def get_when_up(url: str, *, within: float = 60.0) -> httpx.Response:
    """GET ``url``, retrying while nothing accepts connections yet (a server that printed its
    address a moment before it listens), for up to ``patience(within)`` s."""
    deadline = time.monotonic() + patience(within)
    while True:
        try:
            return httpx.get(url, timeout=HTTP_TIMEOUT)
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)

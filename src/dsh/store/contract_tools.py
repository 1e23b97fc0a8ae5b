"""Helpers the store contract checks share: the opener types, assertions and a sample header."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from dsh.events import SessionHeader
from dsh.store.base import EventStore

StoreOpener = Callable[[], Awaitable[EventStore]]
ContractCheck = Callable[[StoreOpener], Awaitable[None]]

BUSY_LINE = re.compile(
    r"session (?P<sid>\S+) is busy \(held by pid (?P<pid>\d+) on (?P<host>\S+) since (?P<since>\S+)\)"
)
"""The one-line ``SessionBusyError`` message."""


def ensure(condition: bool, message: str) -> None:
    """Raise ``AssertionError(message)`` unless ``condition``."""
    if not condition:
        raise AssertionError(message)


async def raises(kind: type[BaseException], awaitable: Awaitable[Any], what: str) -> BaseException:
    """Await ``awaitable`` and return the ``kind`` it raised (``AssertionError`` if none)."""
    try:
        await awaitable
    except kind as exc:
        return exc
    raise AssertionError(f"{what}: expected {kind.__name__}, nothing was raised")


def sample_header(sid: str, **fields: Any) -> SessionHeader:
    """A header for ``sid`` in ``/work`` created at 1000 ms unless ``fields`` say otherwise."""
    return SessionHeader(id=sid, created_at=fields.pop("created_at", 1_000), cwd="/work", **fields)

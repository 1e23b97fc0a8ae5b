"""Identifiers and clocks: session and message ids, epoch-millisecond time."""

from __future__ import annotations

import time
import uuid


def new_session_id() -> str:
    """Return a fresh random session id (a UUID4 string, as the original uses)."""
    return str(uuid.uuid4())


def new_message_id() -> str:
    """Return a fresh random message id."""
    return str(uuid.uuid4())


def now_ms() -> int:
    """Wall-clock epoch milliseconds (never used for ordering)."""
    return time.time_ns() // 1_000_000

"""Handler ids ``<dialect>:<point>:<n>``: one process-wide counter per dialect, resettable.

As in the original, ``n`` counts every command run of a dialect in this process, across
events and sessions (a Stop hook that runs twice is ``claude-code:Stop:1``, then ``:2``).
:func:`reset_handler_ids` starts the counters again at 1, so a replay or a test that runs
after others numbers its hooks exactly as a fresh process would.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from dsh.hooks.config import DIALECTS, Dialect

_counters: dict[Dialect, Iterator[int]] = {}


def reset_handler_ids() -> None:
    """Start every dialect's counter again at 1."""
    for dialect in DIALECTS:
        _counters[dialect] = itertools.count(1)


def next_handler_id(dialect: Dialect, point: str) -> str:
    """The next id of ``dialect`` (the counter is shared by every point)."""
    return f"{dialect}:{point}:{next(_counters[dialect])}"


reset_handler_ids()

"""In-memory sessions: the append-only log with contiguous seqs, and views over it.

Names load on first use (:mod:`dsh.lazy`): ``import dsh.session.digest`` (a listing reading
kept digests) does not load the log, the history projector or the timeline fold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.lazy import exports

_HOMES = {
    "HistoryProjector": "dsh.session.history",
    "Session": "dsh.session.log",
    "open_turn": "dsh.session.timeline.state",
    "all_assistant_text": "dsh.session.views",
    "final_assistant_text": "dsh.session.views",
    "interrupted_turn_closers": "dsh.session.views",
    "usage_totals": "dsh.session.views",
}

__all__ = [
    "HistoryProjector",
    "Session",
    "all_assistant_text",
    "final_assistant_text",
    "interrupted_turn_closers",
    "open_turn",
    "usage_totals",
]

__getattr__, __dir__ = exports(__name__, _HOMES)

if TYPE_CHECKING:
    from dsh.session.history import HistoryProjector
    from dsh.session.log import Session
    from dsh.session.timeline.state import open_turn
    from dsh.session.views import (
        all_assistant_text,
        final_assistant_text,
        interrupted_turn_closers,
        usage_totals,
    )

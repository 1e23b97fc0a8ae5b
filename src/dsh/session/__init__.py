"""In-memory sessions: the append-only log with contiguous seqs, and views over it."""

from dsh.session.history import HistoryProjector
from dsh.session.log import Session
from dsh.session.timeline.state import open_turn
from dsh.session.views import (
    all_assistant_text,
    final_assistant_text,
    interrupted_turn_closers,
    usage_totals,
)

__all__ = [
    "HistoryProjector",
    "Session",
    "all_assistant_text",
    "final_assistant_text",
    "interrupted_turn_closers",
    "open_turn",
    "usage_totals",
]

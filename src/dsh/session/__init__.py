"""In-memory sessions: the append-only log with contiguous seqs, and history projection."""

from dsh.session.history import HistoryProjector
from dsh.session.log import Session

__all__ = ["HistoryProjector", "Session"]

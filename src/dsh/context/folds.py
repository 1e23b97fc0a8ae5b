"""Where an incremental pass over one session's log stopped.

A pre-step asks three questions of the whole log — what a compaction shadowed, which
instructions are visible, which skill catalog is shown — and a long session's log is long:
each pass folds only what was appended since the last (:class:`FoldMark`), so a step of a
100 k-event session does not walk its user messages three times over.
"""

from __future__ import annotations

from dsh.session import Session


class FoldMark:
    """The session a fold last read, the size of its shadowed set then, and its next seq."""

    __slots__ = ("_at",)

    def __init__(self) -> None:
        self._at: tuple[Session, int, int] | None = None

    def since(self, session: Session, hidden: int = 0) -> int:
        """The seq to fold ``session`` from: where the last fold stopped, or 0 — start over,
        the fold's state dropped — when that was another session, a longer log, or when
        ``hidden`` (how many seqs are shadowed now) differs: a compaction may have taken what
        was folded off the surface."""
        at = self._at
        if at is None or at[0] is not session or at[1] != hidden or at[2] > session.next_seq:
            return 0
        return at[2]

    def reached(self, session: Session, hidden: int = 0) -> None:
        """The fold has read ``session`` to its end, with ``hidden`` seqs shadowed."""
        self._at = (session, hidden, session.next_seq)

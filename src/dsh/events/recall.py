"""What compactions replaced: each compaction's original messages, read back from the log.

Every ``compaction/summary`` names the surface nodes its checkpoint replaced
(``shadowedSeqs``); those events are still in the log. A later compaction may replace an
earlier checkpoint: that checkpoint is not an original (its own compaction holds the
originals it stands for), so a span's originals are its non-checkpoint messages and it
names the checkpoints it folded in. A compaction is named ``c<summarySeq>`` (the
proposal's checkpoint id, reference §1.15); its ``compactionId`` names it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh.events.compaction import is_checkpoint, summary_of
from dsh.events.envelope import Event
from dsh.events.history import HistoryMessage, event_message, typed_message
from dsh.events.vocabulary import TURN_START


@dataclass(frozen=True, slots=True)
class Original:
    """One replaced message: the turn it was logged in (``None``: between turns)."""

    turn: int | None
    message: HistoryMessage

    @property
    def seq(self) -> int:
        return self.message.seq


@dataclass(frozen=True, slots=True)
class ReplacedSpan:
    """One successful compaction: its name, the originals it replaced (in surface order)
    and the names of the earlier checkpoints it folded in."""

    name: str
    compaction_id: str
    summary_seq: int
    originals: tuple[Original, ...]
    nested: tuple[str, ...]

    def names(self, wanted: str) -> bool:
        return wanted in (self.name, self.compaction_id)


def _compaction_of(event: Event) -> str | None:
    """The ``compactionId`` a checkpoint's source names."""
    source = event.data.get("source") if isinstance(event.data, dict) else None
    found = source.get("compactionId") if isinstance(source, dict) else None
    return found if isinstance(found, str) else None


def replaced_spans(events: Sequence[Event]) -> list[ReplacedSpan]:
    """Every compaction of ``events`` whose summary was logged, in log order."""
    by_seq: dict[int, Event] = {}
    turns: dict[int, int | None] = {}
    turn: int | None = None
    summaries: list[Event] = []
    for event in events:
        if event.type == TURN_START and isinstance(event.data, dict) and type(event.data.get("turn")) is int:
            turn = event.data["turn"]
        by_seq[event.seq] = event
        turns[event.seq] = turn
        if summary_of(event) is not None:
            summaries.append(event)
    names: dict[str, str] = {}  # compactionId -> name
    spans = []
    for event in summaries:
        data = summary_of(event)
        assert data is not None
        name = f"c{event.seq}"
        names[str(data.get("compactionId", ""))] = name
        originals: list[Original] = []
        nested: list[str] = []
        for seq in data["shadowedSeqs"]:
            node = by_seq.get(seq)
            if node is None:
                continue
            if is_checkpoint(node):
                nested.append(names.get(_compaction_of(node) or "", f"#{seq}"))
                continue
            message = event_message(node)
            if message is not None:
                originals.append(Original(turns.get(seq), typed_message(seq, message)))
        spans.append(
            ReplacedSpan(name, str(data.get("compactionId", "")), event.seq, tuple(originals), tuple(nested))
        )
    return spans

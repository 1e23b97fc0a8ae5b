"""The row stores' :class:`~dsh.events.fork.TurnMarks`: a parent's turn boundaries read by SQL.

SQLite and PostgreSQL first probe their partial ``turn/end`` index (:func:`drive` /
:func:`adrive` run :func:`dsh.events.fork.probe_cut`: O(log n) seeks for a fork at a turn),
and only when that finds nothing answer the cut rule (:func:`dsh.events.fork.resolve_cut`,
which then refuses) without loading the parent: its ``turn/end`` rows (through the
partial ``events_turn_ends`` index), its last ``turn/start`` row (a backward scan of the
session's key that stops at the first one) and its length. :func:`marks_from_rows` turns
those rows into the marks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Final

import orjson

from dsh.errors import CorruptLogError
from dsh.events.fork import EndProbe, TurnMarks, turn_number
from dsh.events.vocabulary import TURN_END, TURN_START

ENDS_WHERE: Final = f"type = '{TURN_END}' ORDER BY seq"
"""The ``turn/end`` rows of a session, oldest first (after ``WHERE session_id = ? AND``)."""
LAST_START_WHERE: Final = f"type = '{TURN_START}' ORDER BY seq DESC LIMIT 1"
"""The last ``turn/start`` row of a session (after ``WHERE session_id = ? AND``)."""
FIRST_END_WHERE: Final = f"type = '{TURN_END}' ORDER BY seq LIMIT 1"
"""The first ``turn/end`` row in a seq range (after ``WHERE session_id = ? AND seq >= ? AND seq < ? AND``)."""

EndHit = tuple[int, int | None] | None
"""The first ``turn/end`` at or after a seq, as (seq, turn); ``None``: none."""

Row = Sequence[Any]
"""``(seq, data)`` with ``data`` as the store keeps it."""


def drive(probe: EndProbe, first_end: Callable[[int], EndHit]) -> int | None:
    """Run :func:`dsh.events.fork.probe_cut` against a blocking index lookup."""
    try:
        seq = next(probe)
        while True:
            seq = probe.send(first_end(seq))
    except StopIteration as stop:
        cut: int | None = stop.value
        return cut


async def adrive(probe: EndProbe, first_end: Callable[[int], Awaitable[EndHit]]) -> int | None:
    """Run :func:`dsh.events.fork.probe_cut` against an async index lookup."""
    try:
        seq = next(probe)
        while True:
            seq = probe.send(await first_end(seq))
    except StopIteration as stop:
        cut: int | None = stop.value
        return cut


def row_turn(data: Any, unpack: Callable[[Any], Any], where: str) -> int | None:
    """The turn number in a stored ``turn/start`` / ``turn/end`` row's data."""
    return _turn(data, unpack, where)


def _turn(data: Any, unpack: Callable[[Any], Any], where: str) -> int | None:
    try:
        return turn_number(orjson.loads(unpack(data)))
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise CorruptLogError(f"{where}: a turn boundary's data is not JSON") from exc


def marks_from_rows(
    ends: Iterable[Row], last_start: Row | None, length: int, unpack: Callable[[Any], Any], where: str
) -> TurnMarks:
    """The marks of a session from its ``turn/end`` rows, last ``turn/start`` row and length."""
    end_marks = [(int(seq), _turn(data, unpack, where)) for seq, data in ends]
    open_turn = None
    if last_start is not None and (not end_marks or int(last_start[0]) > end_marks[-1][0]):
        open_turn = (_turn(last_start[1], unpack, where), int(last_start[0]))
    return TurnMarks(end_marks, open_turn, length)

"""Rows of the SQL stores (SQLite, PostgreSQL): an event's columns, and rows back into
headers, summaries and events.

The two row stores keep the same columns; what a stored row must be to be read back (a
header that obeys the header rules, contiguous seqs, known or ignorable types, JSON that
parses) is checked here, once, and a violation is ``CorruptLogError`` /
``UnsupportedFormatError`` naming the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, Final, cast, overload

import orjson

from dsh import jsonx
from dsh.errors import CorruptLogError, InvalidEventError, UnsupportedFormatError
from dsh.events import Event, SessionHeader, read_event
from dsh.events.deferred import join_tail
from dsh.events.sparse import SparseLog, UnbuiltRun
from dsh.events.vocabulary import KNOWN_TYPES
from dsh.store.base import SessionSummary
from dsh.store.bulk import paused_gc
from dsh.store.codec import encode_data_checked

EventRow = tuple[int, str, int, Any, Any, str | None]
"""``seq, type, time, data, tail, envelope`` as selected: ``tail`` the deferred tail
(``dsh.events.deferred``; ``None``: kept whole), or in a surface read whether there is one
(``data`` then ``NULL`` for an opaque type); ``envelope`` the row's ``surface_op`` when it has
no ``source_event_seqs`` and is not ignorable (nearly every row), else :data:`RARE_ENVELOPE`
and the JSON array ``[surface_op, source_event_seqs, ignorable]``. One column for the three
a row nearly always leaves empty: each column selected costs ~0.1 us a row (a 1 M-event
read's fetch: 1.58 s with the three, 1.41 s with the one)."""

RARE_ENVELOPE: Final = "!"
"""What starts an ``envelope`` column holding the three columns as an array (no JSON text
starts with it, so a ``surface_op`` is never taken for one)."""


def event_columns(event: Event) -> tuple[bytes, str | None, str | None]:
    """The JSON columns of one (envelope-checked) event: ``data`` (its canonical encoding),
    ``surface_op`` and ``source_event_seqs`` (text, or ``None``); refuses non-lossless JSON."""
    where = f"{event.type}#{event.seq}"
    data = encode_data_checked(event, f"{where}.data")
    op = event.surface_op
    surface_op = None if op is None else jsonx.encode_checked(op, f"{where}.surfaceOp").decode()
    seqs = event.source_event_seqs
    source = None if seqs is None else jsonx.dumps_unchecked(list(seqs)).decode()
    return data, surface_op, source


def header_from_row(row: Sequence[Any], where: str) -> tuple[SessionHeader, int]:
    """The header and cut of a ``sessions`` row of the SQL stores.

    Columns, in order: id, created_at, cwd, parent_session, origin, delegation_depth,
    agent_preset, is_seeded, inherited_event_count. A row that breaks the header rules is
    corrupt (``CorruptLogError`` naming ``where``).
    """
    try:
        header = SessionHeader(
            id=row[0],
            created_at=row[1],
            cwd=row[2],
            parent_session=row[3],
            origin=row[4],
            delegation_depth=row[5],
            agent_preset=row[6],
            is_seeded=bool(row[7]),
        )
    except InvalidEventError as exc:
        raise CorruptLogError(f"{where}: {exc}") from exc
    return header, int(row[8])


def summary_from_row(row: Sequence[Any], where: str) -> SessionSummary:
    """A listing row of the SQL stores: the columns of :func:`header_from_row`, then the event
    count and the last event's time (``NULL``: no event)."""
    header, cut = header_from_row(row, where)
    return SessionSummary(header, cut, row[9], row[10])


@overload
def events_from_rows(
    rows: Iterable[EventRow],
    start: int,
    where: str,
    session_id: str,
    inflate: Callable[[bytes], bytes],
    decode_errors: tuple[type[Exception], ...] = (),
    *,
    whole: bool = True,
    runs: None = None,
) -> list[Event]: ...


@overload
def events_from_rows(
    rows: Iterable[EventRow],
    start: int,
    where: str,
    session_id: str,
    inflate: Callable[[bytes], bytes],
    decode_errors: tuple[type[Exception], ...] = (),
    *,
    whole: bool = True,
    runs: Mapping[int, list[Event] | UnbuiltRun],
) -> list[Event] | SparseLog: ...


def events_from_rows(
    rows: Iterable[EventRow],
    start: int,
    where: str,
    session_id: str,
    inflate: Callable[[bytes], bytes],
    decode_errors: tuple[type[Exception], ...] = (),
    *,
    whole: bool = True,
    runs: Mapping[int, list[Event] | UnbuiltRun] | None = None,
) -> list[Event] | SparseLog:
    """The events of ``rows`` (seqs from ``start``, contiguous). A stored ``data`` or ``tail``
    value is JSON text, or bytes that ``inflate`` turns into it (a compressed BLOB); a tail is
    joined back to its data (``dsh.events.deferred``). ``whole=False`` (a surface read): an
    event whose tail or data was not selected comes back ``partial``. A gap, an unknown
    non-ignorable type or bad JSON (or one of ``decode_errors``) is refused, naming ``where``,
    the session and the seq. Trusted rows: their payload shapes were checked when they were
    appended or imported, so only the envelope is checked again here. ``runs``: events decoded
    apart (SQLite's packed chunk runs, ``dsh.store.chunk_runs``), each list by its first seq,
    spliced in where the rows leave a gap for them; an unbuilt run (a surface read's) leaves
    its gap, and the events come back a ``dsh.events.sparse.SparseLog``. Each known type is
    one string (not one per row), and events are built by ``dsh.events.read_event``."""
    runs = runs or {}
    canonical = _KNOWN.get  # one string per known type, not one per event
    loads = orjson.loads
    bad_json: tuple[type[Exception], ...] = (orjson.JSONDecodeError, *decode_errors)
    events: list[Event | None] = []
    unbuilt: list[UnbuiltRun] = []
    append = events.append
    expected = start
    try:
        with paused_gc():
            for seq, etype, time, data, tail, op in rows:
                if seq != expected:
                    expected = _splice(runs, events, unbuilt, expected)
                if seq != expected:
                    raise CorruptLogError(
                        f"{where}: session {session_id}: expected seq {expected}, found {seq}"
                    )
                seqs = None
                ignorable = 0
                if op is not None and op.startswith(RARE_ENVELOPE):  # the three columns in one array
                    op, seqs, ignorable = loads(op[1:])
                    seqs = None if seqs is None else tuple(loads(seqs))
                if op is None:  # nearly every row
                    pass
                elif op == _APPEND:
                    op = "append"
                else:
                    op = loads(op)
                known = canonical(etype)
                if known is None:
                    if not ignorable:
                        raise UnsupportedFormatError(
                            f"{where}: session {session_id}, seq {seq}: unknown event type {etype!r} "
                            "that is not ignorable (written by a newer dsh? upgrade dsh)"
                        )
                    known = etype
                if data is None:  # a surface read left an opaque payload out
                    payload, partial = None, True
                else:
                    raw = data if type(data) is str else inflate(data)
                    partial = False
                    if tail is None:
                        pass
                    elif whole:
                        raw = join_tail(raw, tail.encode() if type(tail) is str else inflate(tail))
                    else:
                        partial = tail == 1
                    payload = loads(raw)
                append(
                    read_event(
                        known,
                        seq,
                        time,
                        payload,
                        op,
                        seqs,
                        ignorable == 1,
                        partial,
                    )
                )
                expected += 1
            expected = _splice(runs, events, unbuilt, expected)  # runs after the last row
    except bad_json as exc:
        raise CorruptLogError(f"{where}: session {session_id}, seq {expected}: bad JSON") from exc
    return SparseLog(events, unbuilt) if unbuilt else cast(list[Event], events)


_KNOWN: dict[str, str] = {t: t for t in KNOWN_TYPES}
_APPEND: Final = '"append"'
"""The ``surface_op`` column of nearly every op: ``"append"`` as JSON."""


def _splice(
    runs: Mapping[int, list[Event] | UnbuiltRun],
    events: list[Event | None],
    unbuilt: list[UnbuiltRun],
    expected: int,
) -> int:
    """Append the runs that start at ``expected`` (one after another; an unbuilt one as its
    gap, kept in ``unbuilt``); the next expected seq."""
    run = runs.get(expected)
    while run is not None:
        if isinstance(run, UnbuiltRun):
            events += repeat(None, run.count)
            unbuilt.append(run)
            expected += run.count
        else:
            events += run
            expected += len(run)
        run = runs.get(expected)
    return expected

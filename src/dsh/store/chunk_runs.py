"""Packed chunk runs of the SQLite store: a write's consecutive stream chunks in one row.

96% of an imported log of the original's shape are ``assistant/chunk`` events, each a tiny
payload that only a full read (replay, the viewer, ``dsh log --chunks``, export) needs. One
``events`` row each made a 2.5 M-event store a 2.5 M-row table. So a run of consecutive plain
chunks written together (one ``append`` batch, a seed, an import) is stored as ONE row:

- keyed by the run's LAST seq, its ``time`` the last chunk's: ``MAX(seq) + 1`` is still the
  next seq and the listings' last time is still the row of the highest seq (no query changes);
- ``run_first``: the run's first seq (``NULL`` on every other row);
- ``data``: the chunks' canonical JSON texts joined by ``\\n`` (canonical JSON holds no raw
  newline), TEXT, or zlib-compressed BLOB when that is smaller (``sqlite_schema.pack_data``);
- ``run_times``: each chunk's time, little-endian int64 deltas (the first one absolute),
  zlib-compressed (a few dozen bytes for a run).

A run holds at most :data:`RUN_MAX_EVENTS` chunks and :data:`RUN_MAX_BYTES` of JSON. Only
plain chunks are packed (no ``surfaceOp``, ``sourceEventSeqs`` or ``ignorable``: those stay
rows of their own, as a lone chunk does). A surface read selects no ``data`` for a chunk
(``sqlite_schema.SELECT_RUN_TIMES``): each run comes back unbuilt (``dsh.events.sparse``: a
``SparseLog`` builds its partial chunks, times decoded, when one of them is read); a full read
decodes the run. :func:`read_runs` reads a segment's runs (through their own partial index),
cut to the segment asked for (a fork's cut or a tail's start may fall inside a run); the other
rows are read without them. A run that does not decode is ``CorruptLogError`` naming the
session — when it is decoded (a surface read's times: when its chunks are first read).
"""

from __future__ import annotations

import sqlite3
import struct
import zlib
from collections.abc import Sequence
from functools import partial
from itertools import accumulate, pairwise, repeat
from typing import Any, Final

import orjson

from dsh.errors import CorruptLogError
from dsh.events import Event
from dsh.events.sparse import UnbuiltRun
from dsh.events.vocabulary import ASSISTANT_CHUNK
from dsh.store.sqlite_schema import (
    INSERT_EVENT,
    INSERT_RUN,
    MAX_SEQ,
    SELECT_RUN_TIMES,
    SELECT_RUNS,
    Row,
    pack_data,
)

RUN_MAX_EVENTS: Final = 1024
"""Chunks in one packed row, at most (the original's cap)."""

RUN_MAX_BYTES: Final = 1 << 20
"""JSON bytes in one packed row, at most (the original's cap: 1 MiB)."""

RunRow = tuple[str, int, str, int, str | bytes, None, None, int, None, int, bytes]
"""An ``events`` row of a packed run: the columns of ``Row``, then ``run_first, run_times``."""


def _packable(row: Row) -> bool:
    """A plain chunk: nothing but its type, seq, time and data (none kept apart), its JSON kept
    as text (a chunk large enough to be compressed stays a row of its own) without a raw
    newline (canonical JSON has none: anything else keeps its bytes as they are)."""
    data = row[4]
    return (
        row[2] == ASSISTANT_CHUNK
        and row[5] is None
        and row[6] is None
        and not row[7]
        and row[8] is None
        and type(data) is str
        and "\n" not in data
    )


def _text(value: str | bytes) -> str:
    return value if isinstance(value, str) else zlib.decompress(value).decode()


def pack_times(times: Sequence[int]) -> bytes:
    """The ``run_times`` value of these chunk times."""
    deltas = [times[0], *(b - a for a, b in pairwise(times))]
    return zlib.compress(struct.pack(f"<{len(deltas)}q", *deltas), 1)


def unpack_times(value: bytes, count: int) -> list[int]:
    """The ``count`` chunk times of a ``run_times`` value (``ValueError``/``zlib.error``/
    ``struct.error`` when it is not that)."""
    raw = zlib.decompress(value)
    if len(raw) != 8 * count:
        raise ValueError(f"{len(raw)} bytes of times for {count} chunks")
    return list(accumulate(struct.unpack(f"<{count}q", raw)))


def pack_rows(rows: Sequence[Row]) -> tuple[list[Row], list[RunRow]]:
    """The rows of one write, runs of two or more plain chunks packed: ``(single rows, runs)``."""
    singles: list[Row] = []
    runs: list[RunRow] = []
    run: list[Row] = []
    size = 0
    for row in rows:
        packable = _packable(row)
        if run and (not packable or len(run) == RUN_MAX_EVENTS or size + len(row[4]) > RUN_MAX_BYTES):
            _close(run, singles, runs)
            run, size = [], 0
        if packable:
            run.append(row)
            size += len(row[4]) + 1
        else:
            singles.append(row)
    if run:
        _close(run, singles, runs)
    return singles, runs


def _close(run: list[Row], singles: list[Row], runs: list[RunRow]) -> None:
    if len(run) == 1:
        singles.append(run[0])
        return
    last = run[-1]
    text = "\n".join([r[4] for r in run])  # type: ignore[misc]
    times = pack_times([r[3] for r in run])
    runs.append(
        (
            last[0],
            last[1],
            ASSISTANT_CHUNK,
            last[3],
            pack_data(text.encode()),
            None,
            None,
            0,
            None,
            run[0][1],
            times,
        )
    )


def _corrupt(where: str, session_id: str, first: int, last: int, exc: Exception) -> CorruptLogError:
    return CorruptLogError(
        f"{where}: session {session_id}: the packed chunk run of seqs {first}..{last} is corrupt ({exc})"
    )


def _times(blob: bytes, count: int, a: int, b: int, where: str, session_id: str, first: int) -> list[int]:
    """The times of a run's chunks ``[a, b)`` (of ``count`` from seq ``first``)."""
    try:
        return unpack_times(blob, count)[a:b]
    except (ValueError, zlib.error, struct.error) as exc:
        raise _corrupt(where, session_id, first, first + count - 1, exc) from exc


def _run(row: Sequence[Any], lo: int, hi: int, where: str, session_id: str) -> list[Event] | UnbuiltRun:
    """The chunks of a packed run (``seq, data, run_first, run_times``) with seqs in ``[lo, hi)``;
    unbuilt when its data was not selected (a surface read): nothing decoded until they are read."""
    last, data, first, blob = row
    count = last - first + 1
    a, b = max(first, lo) - first, min(last + 1, hi) - first
    if count < 2 or type(blob) is not bytes:
        raise _corrupt(where, session_id, first, last, ValueError("not a run"))
    if data is None:
        return UnbuiltRun(first + a, b - a, partial(_times, blob, count, a, b, where, session_id, first))
    times = _times(blob, count, a, b, where, session_id, first)
    try:
        texts = _text(data).split("\n")  # canonical JSON holds no raw newline
        if len(texts) != count:
            raise ValueError(f"{len(texts)} chunks for {count} seqs")
        payloads = orjson.loads("[" + ",".join(texts[a:b]) + "]")  # only the chunks asked for
        if type(payloads) is not list or len(payloads) != b - a:
            raise ValueError(f"not {b - a} chunks")
    except (ValueError, zlib.error, struct.error, UnicodeDecodeError) as exc:  # JSONDecodeError: a ValueError
        raise _corrupt(where, session_id, first, last, exc) from exc
    return list(map(Event, repeat(ASSISTANT_CHUNK), range(first + a, first + b), times, payloads))


def read_runs(
    conn: sqlite3.Connection, session_id: str, lo: int, hi: int, whole: bool, where: str
) -> dict[int, list[Event] | UnbuiltRun]:
    """The chunks of ``session_id``'s packed runs with seqs in ``[lo, hi)`` (``whole=False``: a
    surface read, each run unbuilt), each run's by its first seq in the range: what
    ``rows.events_from_rows`` splices between the other rows (``sqlite_schema.SELECT_EVENTS_IN``)."""
    params = (session_id, lo, min(hi + RUN_MAX_EVENTS, MAX_SEQ), hi)
    runs: dict[int, list[Event] | UnbuiltRun] = {}
    for row in conn.execute(SELECT_RUNS if whole else SELECT_RUN_TIMES, params):
        run = _run(row, lo, hi, where, session_id)
        if isinstance(run, UnbuiltRun):
            if run.count > 0:
                runs[run.first] = run
        elif run:
            runs[run[0].seq] = run
    return runs


def insert_rows(conn: sqlite3.Connection, rows: Sequence[Row]) -> None:
    """Insert one write's rows, its chunk runs packed (:func:`pack_rows`)."""
    singles, runs = pack_rows(rows)
    conn.executemany(INSERT_EVENT, singles)
    if runs:
        conn.executemany(INSERT_RUN, runs)

"""The JSONL store's live spool (``dsh.store.spool``): ``<root>/spool/<session id>.jsonl``.

One line per batch (``{"stream", "at", "first", "chunks"}``), appended by the session's
writer. A batch's cursor is ``base`` + the byte offset of its line's end, where ``base`` is
the file's optional first line ``{"base": N}``: dropping batches rewrites the file (a temp
file and a rename) with ``base`` moved past everything it held, so cursors only grow and a
reader's cursor stays valid. A batch kept across a rewrite gets a new, higher cursor (a
reader may see it twice: readers skip deltas they printed, by ``first``). Blocking
functions, run off the event loop by the store.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Any, Final

import orjson

from dsh import jsonx
from dsh.errors import StoreError
from dsh.store.lease import session_file_stem
from dsh.store.spool import SpoolBatch, Spooled, chunks_of, spooled_batch

SPOOL_DIR: Final = "spool"


def spool_path(root: Path, session_id: str) -> Path:
    return root / SPOOL_DIR / f"{session_file_stem(session_id)}.jsonl"


def _line(batch: SpoolBatch, chunks: bytes) -> bytes:
    head = jsonx.dumps_unchecked({"stream": batch.stream, "at": batch.at, "first": batch.first})
    return head[:-1] + b',"chunks":' + chunks + b"}\n"


def put(root: Path, session_id: str, batch: SpoolBatch, chunks: bytes) -> None:
    path = spool_path(root, session_id)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, _line(batch, chunks))
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreError(f"cannot write the live spool {path}: {exc.strerror or exc}") from exc


def _read(path: Path) -> tuple[int, int, list[tuple[int, bytes]]]:
    """The file's ``base``, its size and each complete batch line with its end offset."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return 0, 0, []
    except OSError as exc:
        raise StoreError(f"cannot read the live spool {path}: {exc.strerror or exc}") from exc
    base, lines, start = 0, [], 0
    while (end := raw.find(b"\n", start)) >= 0:
        line, first, start = raw[start:end], start == 0, end + 1
        if first and line.startswith(b'{"base":'):
            with contextlib.suppress(orjson.JSONDecodeError, TypeError, ValueError, KeyError):
                base = int(orjson.loads(line)["base"])
            continue
        lines.append((start, line))
    return base, len(raw), lines


def _row(cursor: int, line: bytes) -> Spooled | None:
    try:
        value: Any = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    chunks = chunks_of(value.get("chunks"))  # parsed with the line: not encoded and parsed again
    return spooled_batch(cursor, value.get("stream"), value.get("at"), value.get("first"), chunks)


def get(root: Path, session_id: str, after: int) -> list[Spooled]:
    base, _, lines = _read(spool_path(root, session_id))
    rows = (_row(base + end, line) for end, line in lines if base + end > after)
    return [row for row in rows if row is not None]


def drop(root: Path, session_id: str, through: int) -> None:
    path = spool_path(root, session_id)
    base, size, lines = _read(path)
    if not lines:
        return
    kept = []
    for end, line in lines:
        row = _row(base + end, line)
        if row is not None and row.batch.at > through:
            kept.append(line + b"\n")
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        temp.write_bytes(jsonx.dumps_unchecked({"base": base + size}) + b"\n" + b"".join(kept))
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise StoreError(f"cannot rewrite the live spool {path}: {exc.strerror or exc}") from exc


def drop_sessions(root: Path, session_ids: list[str]) -> None:
    """The deleted sessions' spool files."""
    for sid in session_ids:
        with contextlib.suppress(FileNotFoundError):
            spool_path(root, sid).unlink()

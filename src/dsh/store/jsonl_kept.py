"""What listings derived from a JSONL directory's files, kept beside them for the next listing.

A JSONL session's summary (its cut, event count, last event time) is a decode of the whole
file, and a listing's row (``dsh.session.digest``: title, status, usage…) a fold of it. The
SQLite store keeps digests in a table; a JSONL directory keeps both in one hidden file,
``<root>/.summaries.json``: per session file, its key when it was read (inode, size,
mtime_ns), its header line, its summary, its warnings and the digest derived at that key; and
for every session file a listing walked, the :class:`Facts` of its header that pick the rows a
bounded listing shows and the session ``--continue`` takes — so those read no file the rows
do not need. An entry is used only while its file's key is unchanged (the rule the in-process
caches of ``dsh.store.jsonl_files`` follow): a file appended to, cut or replaced is read again.

The file is a cache: written whole through a temp file and a rename after a listing that read
something new (not synced: a crash leaves the old file or none), best effort (an unwritable
directory is only slower), and untrusted — anything that is not exactly the shape below is
ignored, entry by entry (a header is decoded and checked as if read from its file, a digest by
``dsh.session.digest`` when used). Facts are only checked for their shape and against their
file's name: a row is always shown from a checked header, so forged facts can only change
which rows a bounded listing picks.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, NamedTuple

from dsh import jsonx
from dsh.events import SessionHeader
from dsh.store.logfile import create_temp

KEPT_NAME: Final = ".summaries.json"
_VERSION: Final = 1

FileKey = tuple[int, int, int]
"""``(inode, size, mtime_ns)``: a file whose key is unchanged has unchanged contents."""


def file_key(st: os.stat_result) -> FileKey:
    """The :data:`FileKey` of a file as ``st`` found it."""
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True, slots=True)
class Kept:
    """One session file as a listing last read it."""

    key: FileKey
    header: str
    """Its first line (the session header), as read."""
    cut: int
    count: int
    last: int | None
    """The last event's time (``None``: no event)."""
    warnings: tuple[str, ...] = ()
    digest: str | None = None
    """The listing digest derived from its ``count`` events (JSON), when one was kept."""

    def with_digest(self, digest: str) -> Kept:
        return replace(self, digest=digest)


class Facts(NamedTuple):
    """What a session file's header tells the walks that pick sessions: ``dsh.store.newest``'s
    ``newest_ids`` (id, creation, parent) and the session ``--continue`` takes (cwd, subagent)."""

    id: str
    created_at: int
    parent_session: str | None
    cwd: str | None
    is_subagent: bool


def facts_of(header: SessionHeader) -> Facts:
    """The facts of a checked header."""
    return Facts(header.id, header.created_at, header.parent_session, header.cwd, header.is_subagent)


RawFacts = list[Any]
"""Kept facts as stored: ``[inode, size, mtime_ns, id, createdAt, parent, cwd, subagent]``,
checked only when used (:func:`kept_facts`): a listing walks every one."""


def raw_facts(key: FileKey, found: Facts) -> RawFacts:
    return [*key, *found]


def of_key(raw: RawFacts, key: FileKey) -> bool:
    """Whether ``raw`` is kept facts of a file at ``key`` (their shape otherwise unchecked)."""
    return type(raw) is list and len(raw) == 8 and raw[0] == key[0] and raw[1] == key[1] and raw[2] == key[2]


def kept_facts(raw: RawFacts, key: FileKey) -> Facts | None:
    """The facts ``raw`` keeps of the file at ``key`` (``None``: not of this key, or not facts)."""
    if not of_key(raw, key):
        return None
    sid, created, parent, cwd, subagent = raw[3:]
    if type(sid) is not str or not sid or type(created) is not int or created < 0:
        return None
    if type(subagent) is not bool:
        return None
    if not (parent is None or type(parent) is str) or not (cwd is None or type(cwd) is str):
        return None
    return Facts(sid, created, parent, cwd, subagent)


@dataclass(slots=True)
class KeptDir:
    """What the kept file holds, by session file name."""

    entries: dict[str, Kept]
    facts: dict[str, RawFacts]


def load_kept(root: Path) -> KeptDir:
    """The kept entries and facts by file name; none when there is no file or it is not ours."""
    try:
        raw = jsonx.loads((root / KEPT_NAME).read_bytes())
    except (OSError, jsonx.JSONDecodeError):
        return KeptDir({}, {})
    files = raw.get("files") if type(raw) is dict and raw.get("version") == _VERSION else None
    if type(files) is not dict:
        return KeptDir({}, {})
    out: dict[str, Kept] = {}
    for name, entry in files.items():
        kept = _entry(entry)
        if kept is not None:
            out[name] = kept
    found = raw.get("facts")
    return KeptDir(out, found if type(found) is dict else {})


def save_kept(root: Path, kept: KeptDir) -> None:
    """Replace the kept file with ``kept``, or remove it when it holds nothing (best effort:
    an ``OSError`` leaves it as it was)."""
    entries = kept.entries
    if not entries and not kept.facts:
        with contextlib.suppress(OSError):
            (root / KEPT_NAME).unlink(missing_ok=True)
        return
    files = {
        name: {
            "key": list(k.key),
            "header": k.header,
            "cut": k.cut,
            "count": k.count,
            "last": k.last,
            "warnings": list(k.warnings),
            **({} if k.digest is None else {"digest": k.digest}),
        }
        for name, k in entries.items()
    }
    data = jsonx.dumps_unchecked({"version": _VERSION, "files": files, "facts": kept.facts})
    try:
        fd, tmp = create_temp(root / KEPT_NAME)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, root / KEPT_NAME)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _int(value: Any) -> bool:
    return type(value) is int and value >= 0


def _entry(entry: Any) -> Kept | None:
    if type(entry) is not dict:
        return None
    key, header, cut, count, last = (entry.get(k) for k in ("key", "header", "cut", "count", "last"))
    warnings, digest = entry.get("warnings", []), entry.get("digest")
    if not (type(key) is list and len(key) == 3 and all(_int(k) for k in key)):
        return None
    if type(header) is not str or not _int(cut) or not _int(count) or not (last is None or type(last) is int):
        return None
    assert isinstance(cut, int) and isinstance(count, int)  # what _int checked
    if type(warnings) is not list or not all(type(w) is str for w in warnings):
        return None
    if digest is not None and type(digest) is not str:
        return None
    return Kept((key[0], key[1], key[2]), header, cut, count, last, tuple(warnings), digest)

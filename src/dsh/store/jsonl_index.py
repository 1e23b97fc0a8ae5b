"""The directory index of a JSONL store: each session file's header and summary, and the
session ``--continue`` takes, reading only the files a query needs — from what this process
read (by file key), what the last listing kept (``dsh.store.jsonl_kept``), a file's sealed last
line (``dsh.store.jsonl_tail``), or else the file decoded whole.

The header line of every session file decides whether a session is wanted — its
:class:`~dsh.store.jsonl_kept.Facts`, kept for the next walk, so an unchanged file is not
opened to decide — and only wanted files are summarized. A file that is not a readable
session of this store (not a dsh header, another session's header, version 0, a newer
version, unreadable) is skipped with a warning instead of failing the listing; a session file
of the other encoding fails it (a root holds one encoding). Blocking: run it off the event
loop; warnings are returned, not reported."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from dsh.errors import CorruptLogError, StoreError, UnsupportedFormatError
from dsh.events import SessionHeader
from dsh.store.base import SessionSummary
from dsh.store.jsonl_encoding import FileEncoding
from dsh.store.jsonl_files import check_name, names_file, read_header, read_shared, scan_file
from dsh.store.jsonl_kept import (
    Facts,
    FileKey,
    Kept,
    KeptDir,
    facts_of,
    file_key,
    kept_facts,
    load_kept,
    of_key,
    raw_facts,
    save_kept,
)
from dsh.store.jsonl_tail import UNKNOWN, sealed_last_time
from dsh.store.logfile import decode_header_line
from dsh.store.newest import newest_ids

T = TypeVar("T")
P = ParamSpec("P")


def _locked(method: Callable[Concatenate[JsonlIndex, P], T]) -> Callable[Concatenate[JsonlIndex, P], T]:
    """One query of the index at a time (worker threads share it; a save walks what it keeps)."""

    def run(self: JsonlIndex, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            return method(self, *args, **kwargs)

    run.__name__, run.__doc__ = method.__name__, method.__doc__
    return run


def _guarded(path: str | Path, read: Callable[[], T | None], warnings: list[str]) -> T | None:
    """``read()``, or ``None`` with a warning when ``path`` is not a readable session here
    (``None`` alone when it was removed meanwhile)."""
    try:
        return read()
    except FileNotFoundError:
        return None  # removed while we listed
    except (CorruptLogError, UnsupportedFormatError) as exc:
        warnings.append(f"skipped a file that is not a readable session here: {exc}")
    except OSError as exc:
        warnings.append(f"skipped {path}: cannot read it: {exc.strerror or exc}")
    return None


@dataclass(frozen=True, slots=True)
class _Summary:
    summary: SessionSummary
    warnings: tuple[str, ...]


class JsonlIndex:
    """Summaries of the sessions in one JSONL directory, reading only the files a query needs."""

    def __init__(self, root: Path, encoding: FileEncoding) -> None:
        self.root = root
        self._encoding = encoding
        self._headers: dict[str, tuple[FileKey, SessionHeader]] = {}
        self._summaries: dict[str, tuple[FileKey, _Summary]] = {}
        self._kept: KeptDir | None = None
        """What the last listing kept (``dsh.store.jsonl_kept``), read on first need."""
        self._seen: dict[str, FileKey] = {}
        """Each session file's key as the last walk of the directory found it."""
        self._dirty = False
        self._lock = threading.Lock()

    def _loaded(self) -> KeptDir:
        """What the last listing kept, read from its file on first need."""
        if self._kept is None:
            self._kept = load_kept(self.root)
        return self._kept

    def _kept_entry(self, path: Path, key: FileKey) -> Kept | None:
        """What a listing kept of the file at ``key``, its header checked (and cached); ``None``
        when nothing valid is kept for it."""
        kept = self._loaded().entries.get(path.name)
        if kept is None or kept.key != key:
            return None
        header = self._kept_header(kept, path)
        if header is None:
            del self._loaded().entries[path.name]
            self._dirty = True
            return None
        self._read(path.name, key, header)
        return kept

    def _header(self, path: Path, key: FileKey) -> SessionHeader:
        cached = self._headers.get(path.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        if self._kept_entry(path, key) is None:
            self._read(path.name, key, read_header(path, self._encoding))
        return self._headers[path.name][1]

    def _read(self, name: str, key: FileKey, header: SessionHeader) -> None:
        """Remember the checked header of the file ``name`` at ``key``, and keep its facts."""
        self._headers[name] = (key, header)
        raw = raw_facts(key, facts_of(header))
        kept = self._loaded().facts
        if kept.get(name) != raw:
            kept[name] = raw
            self._dirty = True

    def _facts(self, name: str, key: FileKey) -> Facts:
        """The facts of the file ``name`` at ``key``: of a header read, else as kept (when they
        are of this file: their id names it), else of its header read now."""
        cached = self._headers.get(name)
        if cached is not None and cached[0] == key:
            return facts_of(cached[1])
        raw = self._loaded().facts.get(name)
        found = None if raw is None else kept_facts(raw, key)
        if found is not None and names_file(found.id, name, self._encoding):
            return found
        return facts_of(self._header(self.root / name, key))

    def _kept_header(self, kept: Kept, path: Path) -> SessionHeader | None:
        """A kept header line, decoded and checked as :func:`read_header` does (``None``: it
        is not one — the file is read instead)."""
        try:
            _, _, header, _ = decode_header_line(kept.header.encode(), str(path), legacy=False)
            check_name(header, path, self._encoding)
        except (CorruptLogError, UnsupportedFormatError):
            return None
        return header

    def _summary(self, path: Path, key: FileKey) -> _Summary:
        cached = self._summaries.get(path.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        kept = self._kept_entry(path, key)
        if kept is not None:
            summary = SessionSummary(self._header(path, key), kept.cut, kept.count, kept.last)
            entry = _Summary(summary, kept.warnings)
        else:
            file = scan_file(*read_shared(path), path, None, self._encoding)
            scan = file.scan
            self._read(path.name, key, scan.header)
            last = scan.events[-1].time if scan.events else None
            summary = SessionSummary(scan.header, scan.inherited_event_count, len(scan.events), last)
            entry = _Summary(summary, tuple(scan.warnings))
            if file.size == key[1]:  # the bytes the key names (a file that grew meanwhile: not kept)
                line = file.plain[: scan.header_end - 1].decode()
                cut, count = summary.inherited_event_count, summary.event_count
                self._keep(path.name, Kept(key, line, cut, count, last, entry.warnings))
        self._summaries[path.name] = (key, entry)
        return entry

    def _keep(self, name: str, kept: Kept) -> None:
        self._loaded().entries[name] = kept
        self._dirty = True

    def _save(self) -> None:
        """Keep what was read since the last save, for the files the last walk found unchanged
        (best effort; nothing when nothing changed; no kept file when no session is left)."""
        if self._kept is None:
            if not self._seen:
                save_kept(self.root, KeptDir({}, {}))
            return
        seen, kept = self._seen, self._kept
        current = KeptDir(
            {name: k for name, k in kept.entries.items() if seen.get(name) == k.key},
            {name: raw for name, raw in kept.facts.items() if name in seen and of_key(raw, seen[name])},
        )
        unchanged = len(current.entries) == len(kept.entries) and len(current.facts) == len(kept.facts)
        if self._dirty or not unchanged or not current.facts:
            self._kept = current
            save_kept(self.root, current)
        self._dirty = False

    @_locked
    def forget(self, names: list[str]) -> None:
        """Drop what was kept of the files ``names`` (deleted sessions)."""
        kept = self._loaded()
        self._kept = KeptDir(
            {name: k for name, k in kept.entries.items() if name not in names},
            {name: raw for name, raw in kept.facts.items() if name not in names},
        )
        shrunk = len(self._kept.entries) != len(kept.entries) or len(self._kept.facts) != len(kept.facts)
        if shrunk or not (self._kept.entries or self._kept.facts):
            save_kept(self.root, self._kept)

    @_locked
    def kept_digests(self, names: dict[str, str] | None) -> dict[str, tuple[int, bytes]]:
        """``KeepsDigests.kept_digests`` of the sessions ``names`` (session id → file name;
        ``None``: every kept one), each only while its file is unchanged since it was kept —
        as the last walk of the directory found it (the summaries a listing derives from are
        that walk's), else as it is now."""
        every = self._loaded().entries
        pairs = [(None, name) for name in every] if names is None else list(names.items())
        out: dict[str, tuple[int, bytes]] = {}
        for sid, name in pairs:
            kept = every.get(name)
            if kept is None or kept.digest is None:
                continue
            key = self._seen.get(name) or self._key_now(name)
            if key != kept.key:
                continue
            if sid is None:
                cached = self._headers.get(name)
                header = (
                    cached[1]
                    if cached is not None and cached[0] == key
                    else self._kept_header(kept, self.root / name)
                )
                if header is None:
                    continue
                sid = header.id
            out[sid] = (kept.count, kept.digest.encode())
        return out

    @_locked
    def keep_digests(self, digests: list[tuple[str, int, bytes]]) -> None:
        """``KeepsDigests.keep_digests`` by file name: each digest derived from ``count``
        events is kept with its file's entry while that file is unchanged and holds as many
        (else it is dropped: the next listing derives it again)."""
        every = self._loaded().entries
        for name, count, digest in digests:
            kept = every.get(name)
            if kept is not None and kept.count == count and self._key_now(name) == kept.key:
                self._keep(name, kept.with_digest(digest.decode()))
        if self._dirty:
            save_kept(self.root, self._loaded())
            self._dirty = False

    def _key_now(self, name: str) -> FileKey | None:
        try:
            st = os.stat(self.root / name)
        except OSError:
            return None
        return file_key(st)

    def damaged(self, stem_prefix: str) -> str | None:
        """Why the first session file named ``stem_prefix...`` cannot be read (file and line), if any."""
        try:
            suffix = self._encoding.suffix
            names = sorted(
                n for n in os.listdir(self.root) if n.startswith(stem_prefix) and n.endswith(suffix)
            )
        except OSError:
            return None
        for name in names:
            path = self.root / name
            try:
                scan_file(*read_shared(path), path, None, self._encoding)
            except (CorruptLogError, UnsupportedFormatError) as exc:
                return str(exc)
            except OSError:
                continue
        return None

    @_locked
    def summaries(self, parent: str | None) -> tuple[list[SessionSummary], list[str]]:
        """Every session (``parent=None``) or the children of ``parent``, with the warnings met;
        a session file of the other encoding is refused (``UnsupportedFormatError`` naming it)."""

        def visit(name: str, key: FileKey) -> SessionSummary | None:
            if parent is not None and self._facts(name, key).parent_session != parent:
                return None
            found = self._summary(self.root / name, key)
            if parent is not None and found.summary.header.parent_session != parent:
                return None  # its kept facts said otherwise
            warnings.extend(found.warnings)
            return found.summary

        warnings: list[str] = []
        out = self._each(visit, warnings)
        self._save()
        out.sort(key=lambda s: (s.header.created_at, s.header.id))
        return out, warnings

    @_locked
    def latest(self, cwd: str) -> tuple[str | None, list[str]]:
        """``FindsLatest`` in this directory (``dsh.store.newest.latest_listed``'s rule), with the
        warnings met: each file's facts and, for a plain file its seal vouches for, the time on
        its last line (``dsh.store.jsonl_tail``); any other file is read whole, as a listing does.
        The session found is checked against its header: kept facts that lied are dropped and
        the directory walked again."""

        def visit(name: str, key: FileKey) -> tuple[int, int, str, Facts, str, FileKey] | None:
            found = self._facts(name, key)
            if found.is_subagent or found.cwd != cwd:
                return None
            path = self.root / name
            last = sealed_last_time(path, key[1]) if not self._encoding.zstd else UNKNOWN
            if last == UNKNOWN:
                summary = self._summary(path, key)
                warnings.extend(summary.warnings)
                last = summary.summary.last_time if summary.summary.event_count else None
            return (found.created_at if last is None else last, found.created_at, found.id, found, name, key)

        while True:
            warnings: list[str] = []
            ranked = self._each(visit, warnings)
            if not ranked:
                break
            *_, found, name, key = max(ranked)
            path = self.root / name
            if _guarded(path, functools.partial(self._header_facts, path, key), warnings) == found:
                self._save()
                return found.id, warnings
            self._loaded().facts.pop(name, None)  # they lied (or the file went): not used again
        self._save()
        return None, warnings

    def _header_facts(self, path: Path, key: FileKey) -> Facts:
        return facts_of(self._header(path, key))

    def _each(self, visit: Callable[[str, FileKey], T | None], warnings: list[str]) -> list[T]:
        """What ``visit`` gives for each session file, by name (``None``s left out); a file that
        cannot be read is skipped with a warning, one of the other encoding refused
        (``UnsupportedFormatError``)."""
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot list {self.root}: {exc.strerror or exc}") from exc
        out: list[T] = []
        encoding = self._encoding
        suffix = encoding.suffix
        self._seen = {}
        for entry in entries:
            name = entry.name
            if encoding.is_other(name):
                raise encoding.mismatch(Path(entry.path))
            if not name.endswith(suffix) or name.startswith("."):
                continue

            def step(entry: os.DirEntry[str] = entry) -> T | None:
                if not entry.is_file():
                    return None
                key = self._seen[entry.name] = file_key(entry.stat())
                return visit(entry.name, key)

            found = _guarded(entry.path, step, warnings)
            if found is not None:
                out.append(found)
        return out

    @_locked
    def newest(self, count: int, roots: bool) -> tuple[int, list[SessionSummary], list[str]]:
        """``ListsNewest`` in this directory: the session count, and the sessions
        ``dsh.store.newest.newest_ids`` picks from every file's facts, with their warnings —
        only those files read (their headers checked) and summarized."""

        def visit(name: str, key: FileKey) -> tuple[Facts, str, FileKey]:
            return self._facts(name, key), name, key

        warnings: list[str] = []
        files = self._each(visit, warnings)
        wanted = newest_ids([found for found, _, _ in files], count, roots=roots)
        out: list[SessionSummary] = []
        for found, name, key in files:
            if found.id in wanted:
                path = self.root / name
                summary = _guarded(path, functools.partial(self._summary, path, key), warnings)
                if summary is not None:
                    warnings.extend(summary.warnings)
                    out.append(summary.summary)
        self._save()
        out.sort(key=lambda s: (s.header.created_at, s.header.id))
        return len(files), out, warnings

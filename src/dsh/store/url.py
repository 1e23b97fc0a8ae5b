"""Store URLs: ``sqlite:PATH``, ``jsonl:DIR``, ``jsonl+zstd:DIR``, ``memory:``, ``postgresql://...``
→ an ``EventStore``.

Backends register an opener per scheme in :data:`SCHEMES` (``scheme -> opener(url, rest)``);
an unknown scheme is a :class:`~dsh.errors.UsageError` naming the URL. The PostgreSQL
backend is imported only when a ``postgresql://`` (or ``postgres://``) URL is opened: psycopg
is an optional dependency (the ``postgres`` extra) and costs start-up time otherwise; every
backend is imported by its opener, so a command pays only for the store it opens.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from dsh.errors import StoreNotFoundError, UsageError, install_hint

if TYPE_CHECKING:
    from dsh.store.base import EventStore

DEFAULT_DB_NAME: Final = "sessions.db"

StoreOpener = Callable[[str, str, bool], "EventStore"]
"""``opener(url, rest, create)``: ``rest`` is the URL after ``scheme:``; ``create=False`` refuses a
missing store (:class:`~dsh.errors.StoreNotFoundError`) instead of creating it on first use."""


def default_sqlite_path() -> Path:
    """``<user data dir>/dsh/sessions.db`` (``$XDG_DATA_HOME/dsh/sessions.db`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("dsh")) / DEFAULT_DB_NAME


def _local_path(rest: str) -> Path:
    """``PATH``, ``//PATH`` (URL style ``sqlite:///abs``) or ``~/PATH`` → a path."""
    if rest.startswith("//"):
        rest = rest[2:]
    return Path(os.path.expanduser(rest))


def _must_exist(label: str, path: Path, create: bool, what: str) -> Path:
    """The one check of ``create=False`` for the file backends: the store is there, or one line."""
    if not create and not path.exists():
        raise StoreNotFoundError(f"no store at {label}: {what} {path} does not exist (nothing was created)")
    return path


def _open_sqlite(url: str, rest: str, create: bool) -> EventStore:
    from dsh.store.sqlite import SqliteEventStore

    path = _local_path(rest) if rest else default_sqlite_path()
    return SqliteEventStore(_must_exist(url or str(path), path, create, "the database file"))


def _jsonl_opener(compression: str) -> StoreOpener:
    """``jsonl:DIR`` (plain ``.jsonl`` files) or ``jsonl+zstd:DIR`` (zstd frames, ``.jsonl.zst``)."""

    def open_jsonl(url: str, rest: str, create: bool) -> EventStore:
        from dsh.store.jsonl import JsonlEventStore

        if not rest:
            scheme = url.partition(":")[0]
            raise UsageError(f"store URL {url!r} needs a directory: {scheme}:DIR")
        path = _must_exist(url, _local_path(rest), create, "the directory")
        return JsonlEventStore(path, compression=compression)

    return open_jsonl


def _open_postgres(url: str, rest: str, create: bool) -> EventStore:
    try:  # optional dependency, imported on use (see the module docstring)
        from dsh.store.postgres import PostgresEventStore
    except ImportError as exc:
        raise UsageError(f"PostgreSQL store URLs need psycopg: {install_hint('postgres')}") from exc
    return PostgresEventStore(url, create=create)


def _open_memory(url: str, rest: str, create: bool) -> EventStore:
    from dsh.store.memory import MemoryEventStore

    if rest:
        raise UsageError(f"store URL {url!r}: memory: takes no path")
    return MemoryEventStore()


SCHEMES: dict[str, StoreOpener] = {
    "sqlite": _open_sqlite,
    "jsonl": _jsonl_opener("none"),
    "jsonl+zstd": _jsonl_opener("zstd"),
    "memory": _open_memory,
    "postgresql": _open_postgres,
    "postgres": _open_postgres,
}
"""Scheme → opener. Other backends add their scheme here (see the module docstring)."""


def open_store(url: str | None, *, create: bool = True) -> EventStore:
    """Open the store named by ``url``; ``None`` or ``""`` is the default SQLite database.

    With ``create=True`` (what writing commands use) opening does no I/O: a database is
    created or checked on first use. ``create=False`` (every read-only command) never
    creates one: a missing SQLite file or JSONL directory raises
    :class:`~dsh.errors.StoreNotFoundError` here, a PostgreSQL database without the dsh
    tables on first use (a missing database is the connection's own error).
    """
    if not url:
        return _open_sqlite("", "", create)
    scheme, sep, rest = url.partition(":")
    opener = SCHEMES.get(scheme.lower()) if sep else None
    if opener is None:
        known = ", ".join(f"{s}:" for s in SCHEMES)
        raise UsageError(f"unknown store URL {url!r} (use one of {known})")
    return opener(url, rest, create)

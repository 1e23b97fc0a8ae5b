"""Store URLs: ``sqlite:PATH``, ``jsonl:DIR``, ``memory:``, ``postgresql://...`` → an ``EventStore``.

Backends register an opener per scheme in :data:`SCHEMES` (``scheme -> opener(url, rest)``);
an unknown scheme is a :class:`~dsh.errors.UsageError` naming the URL. The PostgreSQL
backend is imported only when a ``postgresql://`` (or ``postgres://``) URL is opened: psycopg
is an optional dependency (the ``postgres`` extra) and costs start-up time otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Final

import platformdirs

from dsh.errors import UsageError, install_hint
from dsh.store.base import EventStore
from dsh.store.jsonl import JsonlEventStore
from dsh.store.memory import MemoryEventStore
from dsh.store.sqlite import SqliteEventStore

DEFAULT_DB_NAME: Final = "sessions.db"

StoreOpener = Callable[[str, str], EventStore]
"""``opener(url, rest)``: ``rest`` is the URL after ``scheme:``."""


def default_sqlite_path() -> Path:
    """``<user data dir>/dsh/sessions.db`` (``$XDG_DATA_HOME/dsh/sessions.db`` on Linux)."""
    return Path(platformdirs.user_data_dir("dsh")) / DEFAULT_DB_NAME


def _local_path(rest: str) -> Path:
    """``PATH``, ``//PATH`` (URL style ``sqlite:///abs``) or ``~/PATH`` → a path."""
    if rest.startswith("//"):
        rest = rest[2:]
    return Path(os.path.expanduser(rest))


def _open_sqlite(url: str, rest: str) -> EventStore:
    return SqliteEventStore(_local_path(rest) if rest else default_sqlite_path())


def _open_jsonl(url: str, rest: str) -> EventStore:
    if not rest:
        raise UsageError(f"store URL {url!r} needs a directory: jsonl:DIR")
    return JsonlEventStore(_local_path(rest))


def _open_postgres(url: str, rest: str) -> EventStore:
    try:  # optional dependency, imported on use (see the module docstring)
        from dsh.store.postgres import PostgresEventStore
    except ImportError as exc:
        raise UsageError(f"PostgreSQL store URLs need psycopg: {install_hint('postgres')}") from exc
    return PostgresEventStore(url)


def _open_memory(url: str, rest: str) -> EventStore:
    if rest:
        raise UsageError(f"store URL {url!r}: memory: takes no path")
    return MemoryEventStore()


SCHEMES: dict[str, StoreOpener] = {
    "sqlite": _open_sqlite,
    "jsonl": _open_jsonl,
    "memory": _open_memory,
    "postgresql": _open_postgres,
    "postgres": _open_postgres,
}
"""Scheme → opener. Other backends add their scheme here (see the module docstring)."""


def open_store(url: str | None) -> EventStore:
    """Open the store named by ``url``; ``None`` or ``""`` is the default SQLite database.

    Opening does no I/O: a database is created or checked on first use.
    """
    if not url:
        return SqliteEventStore(default_sqlite_path())
    scheme, sep, rest = url.partition(":")
    opener = SCHEMES.get(scheme.lower()) if sep else None
    if opener is None:
        known = ", ".join(f"{s}:" for s in SCHEMES)
        raise UsageError(f"unknown store URL {url!r} (use one of {known})")
    return opener(url, rest)

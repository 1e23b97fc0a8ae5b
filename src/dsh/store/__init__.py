"""Stores: durable, append-only session logs behind the ``EventStore`` Protocol.

Names load on first use (:mod:`dsh.lazy`): importing one store module does not open every backend's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.lazy import exports

_HOMES = {
    "EventStore": "dsh.store.base",
    "LeaseHolder": "dsh.store.base",
    "LoadedSession": "dsh.store.base",
    "SessionLease": "dsh.store.base",
    "SessionSummary": "dsh.store.base",
    "JsonlEventStore": "dsh.store.jsonl",
    "DecodedLog": "dsh.store.logfile",
    "decode_log": "dsh.store.logfile",
    "encode_log": "dsh.store.logfile",
    "read_log_file": "dsh.store.logfile",
    "write_log_file": "dsh.store.logfile",
    "MemoryEventStore": "dsh.store.memory",
    "MemorySpace": "dsh.store.memory",
    "SqliteEventStore": "dsh.store.sqlite",
    "export_session": "dsh.store.transfer",
    "export_session_file": "dsh.store.transfer",
    "import_log": "dsh.store.transfer",
    "default_sqlite_path": "dsh.store.url",
    "open_store": "dsh.store.url",
}

__all__ = [
    "DecodedLog",
    "EventStore",
    "JsonlEventStore",
    "LeaseHolder",
    "LoadedSession",
    "MemoryEventStore",
    "MemorySpace",
    "SessionLease",
    "SessionSummary",
    "SqliteEventStore",
    "decode_log",
    "default_sqlite_path",
    "encode_log",
    "export_session",
    "export_session_file",
    "import_log",
    "open_store",
    "read_log_file",
    "write_log_file",
]

__getattr__, __dir__ = exports(__name__, _HOMES)

if TYPE_CHECKING:
    from dsh.store.base import EventStore, LeaseHolder, LoadedSession, SessionLease, SessionSummary
    from dsh.store.jsonl import JsonlEventStore
    from dsh.store.logfile import DecodedLog, decode_log, encode_log, read_log_file, write_log_file
    from dsh.store.memory import MemoryEventStore, MemorySpace
    from dsh.store.sqlite import SqliteEventStore
    from dsh.store.transfer import export_session, export_session_file, import_log
    from dsh.store.url import default_sqlite_path, open_store

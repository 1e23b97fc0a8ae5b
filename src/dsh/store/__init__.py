"""Stores: durable, append-only session logs behind the ``EventStore`` Protocol."""

from dsh.store.base import EventStore, LeaseHolder, LoadedSession, SessionLease, SessionSummary
from dsh.store.jsonl import JsonlEventStore
from dsh.store.logfile import DecodedLog, decode_log, encode_log, read_log_file, write_log_file
from dsh.store.memory import MemoryEventStore, MemorySpace
from dsh.store.sqlite import SqliteEventStore
from dsh.store.transfer import export_session, export_session_file, import_log
from dsh.store.url import default_sqlite_path, open_store

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

"""Stores: durable, append-only session logs behind the ``EventStore`` Protocol."""

from dsh.store.base import EventStore, LoadedSession, SessionSummary

__all__ = ["EventStore", "LoadedSession", "SessionSummary"]

"""Store backends are storage only: the public ``EventStore`` methods are written once."""

from __future__ import annotations

import pytest

from dsh.store.jsonl import JsonlEventStore
from dsh.store.memory import MemoryEventStore
from dsh.store.postgres import PostgresEventStore
from dsh.store.sqlite import SqliteEventStore

_SHARED = (
    "create",
    "create_batch",
    "load",
    "read_from",
    "exists",
    "list_sessions",
    "children",
    "fork",
    "lease",
    "delete",
    "close",
    "__aenter__",
    "__aexit__",
)


@pytest.mark.parametrize("backend", [MemoryEventStore, JsonlEventStore, SqliteEventStore, PostgresEventStore])
def test_a_backend_defines_no_public_store_method_but_append(backend: type) -> None:
    """``append`` stays per backend (each keeps its next seq its own way; the check is shared)."""
    own = [name for cls in backend.__mro__ if cls.__module__ == backend.__module__ for name in vars(cls)]
    assert [name for name in _SHARED if name in own] == []

"""Store fixtures: openers per backend, each over fresh storage in ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dsh.store.jsonl_files as jsonl_files
import dsh.store.jsonl_index as jsonl_index
from dsh.store import EventStore, JsonlEventStore, MemoryEventStore, MemorySpace, SqliteEventStore
from dsh.store.contract import StoreOpener
from dsh.store.logfile import scan_log

BACKENDS = ("memory", "jsonl", "jsonl-zstd", "sqlite")

OpenerFactory = Callable[[str, Path], StoreOpener]


def _make_opener(backend: str, root: Path) -> StoreOpener:
    space = MemorySpace()

    async def open_store() -> EventStore:
        if backend == "memory":
            return MemoryEventStore(space)
        if backend == "jsonl":
            return JsonlEventStore(root / "sessions")
        if backend == "jsonl-zstd":
            return JsonlEventStore(root / "sessions", compression="zstd")
        return SqliteEventStore(root / "sessions.db")

    return open_store


@pytest.fixture
def make_opener() -> OpenerFactory:
    """``make_opener(backend, dir)``: an opener returning new handles on one storage in ``dir``."""
    return _make_opener


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opener(backend: str, tmp_path: Path) -> StoreOpener:
    return _make_opener(backend, tmp_path)


@pytest.fixture
def jsonl_decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every JSONL store file decoded whole from now on, in order."""
    decoded: list[str] = []

    def counted(data: bytes, source: str, **kwargs: Any) -> Any:
        decoded.append(Path(source).name)
        return scan_log(data, source, **kwargs)

    monkeypatch.setattr(jsonl_files, "scan_log", counted)
    return decoded


@pytest.fixture
def jsonl_header_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every JSONL store file whose header line a listing reads from now on."""
    read: list[str] = []
    real = jsonl_files.read_header  # what the index calls, by its name there

    def counted(path: Path, encoding: Any) -> Any:
        read.append(path.name)
        return real(path, encoding)

    monkeypatch.setattr(jsonl_index, "read_header", counted)
    return read

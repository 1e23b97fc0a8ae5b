"""Store URLs: the three embedded schemes, the default location and clear refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsh.errors import UsageError
from dsh.store import JsonlEventStore, MemoryEventStore, SqliteEventStore, default_sqlite_path, open_store


def test_sqlite_urls(tmp_path: Path) -> None:
    store = open_store(f"sqlite:{tmp_path}/a.db")
    assert isinstance(store, SqliteEventStore) and store.path == tmp_path / "a.db"
    url_style = open_store(f"sqlite://{tmp_path}/b.db")
    assert isinstance(url_style, SqliteEventStore) and url_style.path == tmp_path / "b.db"
    relative = open_store("sqlite:rel/c.db")
    assert isinstance(relative, SqliteEventStore) and relative.path == Path("rel/c.db")


def test_jsonl_and_memory_urls(tmp_path: Path) -> None:
    store = open_store(f"jsonl:{tmp_path}/logs")
    assert isinstance(store, JsonlEventStore) and store.root == tmp_path / "logs"
    assert isinstance(open_store("memory:"), MemoryEventStore)


def test_the_default_is_sqlite_in_the_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_sqlite_path() == tmp_path / "dsh" / "sessions.db"
    for url in (None, "", "sqlite:"):
        store = open_store(url)
        assert isinstance(store, SqliteEventStore) and store.path == tmp_path / "dsh" / "sessions.db"


@pytest.mark.parametrize("url", ["redis:x", "/tmp/sessions.db", "jsonl:", "memory:x"])
def test_bad_urls_are_usage_errors_naming_the_url(url: str) -> None:
    with pytest.raises(UsageError) as info:
        open_store(url)
    assert repr(url) in str(info.value) and "\n" not in str(info.value)


def test_opening_a_sqlite_store_imports_no_jsonl_backend(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 's.db'}"
    backend = ("dsh.store.jsonl", "dsh.store.staging", "dsh.store.seal")
    code = (
        "import sys\nfrom dsh.store.url import open_store\n"
        f"open_store({url!r})\n"
        f"print(sorted(m for m in sys.modules if m in {backend!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["[]"]
    assert isinstance(open_store(f"jsonl:{tmp_path / 'j'}"), JsonlEventStore)

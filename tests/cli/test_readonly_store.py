"""Read-only commands never create a store (issue 35, item 9): a mistyped ``--store`` is one
line naming it, exit 1, and nothing appears on disk; writing commands still create theirs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.errors import StoreNotFoundError
from dsh.store.url import open_store
from tests.cli.conftest import Dsh

SCENARIO = Path(__file__).parents[2] / "src/dsh/snapshot/scenarios/text-turn"

READ_ONLY = (
    ("sessions", "list"),
    ("sessions", "list", "--json"),
    ("sessions", "tree"),
    ("sessions", "show", "abc"),
    ("sessions", "export", "abc"),
    ("sessions", "rm", "abc", "--yes"),
    ("sessions", "prune", "--older-than", "30d"),
    ("log", "abc"),
    ("sessions", "tail", "abc"),
    ("ui", "--port", "0"),
)


@pytest.fixture(params=["sqlite", "jsonl"])
def missing(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """A store URL whose parent directories do not exist, and the top one of them."""
    top = tmp_path / "no" / "such"
    url = f"sqlite:{top / 'dir' / 'x.db'}" if request.param == "sqlite" else f"jsonl:{top / 'dir'}"
    return url, top


@pytest.mark.parametrize("argv", READ_ONLY, ids=lambda a: " ".join(a))
def test_a_read_only_command_refuses_a_missing_store_and_creates_nothing(
    argv: tuple[str, ...], missing: tuple[str, Path], tmp_path: Path
) -> None:
    url, top = missing
    r = Dsh(url, tmp_path)(*argv, "--store", url)
    assert r.code == 1, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"dsh: error: no store at {url}"), r.stderr
    assert "no sessions" not in r.stdout
    assert not top.parent.joinpath("no").exists(), "a read-only command created directories"


def test_the_default_store_is_not_created_by_a_read_only_command(tmp_path: Path) -> None:
    dsh = Dsh("", tmp_path)
    r = dsh("sessions", "list")
    assert r.code == 1 and "dsh: error: no store at " in r.stderr, r.stderr
    assert not (tmp_path / "data").exists()


def test_a_writing_command_still_creates_its_store(missing: tuple[str, Path], tmp_path: Path) -> None:
    url, top = missing
    dsh = Dsh(url, tmp_path)
    dsh("replay", SCENARIO, "--store", url).ok()
    assert top.exists()
    listed = dsh("sessions", "list", "--json").json()
    assert len(listed) == 1


def test_open_store_create_false_is_the_one_rule(tmp_path: Path) -> None:
    for url in (f"sqlite:{tmp_path / 'a' / 'x.db'}", f"jsonl:{tmp_path / 'b'}", str(tmp_path / "c.db")):
        if not url.startswith(("sqlite:", "jsonl:")):
            url = f"sqlite:{url}"
        with pytest.raises(StoreNotFoundError, match="no store at"):
            open_store(url, create=False)
    assert list(tmp_path.iterdir()) == []
    open_store("memory:", create=False)  # nothing to be missing


@pytest.fixture
def pg_schema() -> Iterator[str]:
    pytest.importorskip("psycopg")
    from dsh.store.postgres_testing import drop_schema, new_schema_name, server_url, unreachable_reason

    url = server_url()
    reason = unreachable_reason(url)
    if reason is not None:
        pytest.skip(reason)
    schema = new_schema_name()
    yield schema
    drop_schema(url, schema)


@pytest.mark.postgres
def test_postgres_read_only_creates_no_tables_and_a_missing_database_is_its_own_error(
    pg_schema: str, tmp_path: Path
) -> None:
    import psycopg

    from dsh.store.postgres_testing import server_url, with_schema

    url = with_schema(server_url(), pg_schema)
    r = Dsh(url, tmp_path)("sessions", "list")
    assert r.code == 1 and r.stderr.startswith("dsh: error: no store at "), r.stderr
    assert r.stderr.count("\n") == 1
    with psycopg.connect(server_url().replace("postgresql://", "postgresql://", 1)) as conn:
        row = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (pg_schema,)).fetchone()
    assert row is None, "a read-only command created the schema"

    base = server_url().rsplit("/", 1)[0]
    r = Dsh(f"{base}/dsh_no_such_database", tmp_path)("sessions", "list")
    assert r.code == 1 and "dsh_no_such_database" in r.stderr and "does not exist" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1

    async def write_then_read() -> int:
        store = open_store(url)  # a writing handle creates the tables
        try:
            return len(await store.list_sessions())
        finally:
            await store.close()

    assert asyncio.run(write_then_read()) == 0
    Dsh(url, tmp_path)("sessions", "list").ok()

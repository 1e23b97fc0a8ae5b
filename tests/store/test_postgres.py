"""``PostgresEventStore`` against a real server: the contract, URLs, version row, many processes, fork.

Every test works in its own fresh schema (``dsh_test_<random>``), dropped afterwards. The
server is ``$DSH_TEST_POSTGRES_URL`` or ``postgresql://postgres@127.0.0.1:5432/test``; when
it is not reachable the tests skip, saying so in the ``-ra`` summary.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
import pytest

from dsh.errors import StoreError, UnsupportedFormatError, UsageError
from dsh.events import Event, SessionHeader
from dsh.store import SqliteEventStore, open_store
from dsh.store.contract import CHECKS, ContractCheck
from dsh.store.newest import latest_listed, latest_top_level
from dsh.store.postgres import SCHEMA_VERSION, PostgresEventStore
from dsh.store.postgres_testing import (
    drop_schema,
    new_schema_name,
    server_url,
    unreachable_reason,
    with_schema,
)
from dsh.store.postgres_url import parse_postgres_url
from dsh.store.samples import completed_turns, open_turn
from dsh.store.transfer import export_session, export_session_file, import_log

pytestmark = pytest.mark.postgres

HEADER = SessionHeader(id="s1", created_at=7, cwd="/w")


@pytest.fixture(scope="module")
def pg_server() -> str:
    """The test server's URL; skips (with the reason) when nothing answers there."""
    url = server_url()
    reason = unreachable_reason(url)
    if reason is not None:
        pytest.skip(reason)
    return url


@pytest.fixture
def schema(pg_server: str) -> Iterator[str]:
    """A fresh schema name on the test server, dropped after the test."""
    name = new_schema_name()
    yield name
    drop_schema(pg_server, name)


@pytest.fixture
def pg_url(pg_server: str, schema: str) -> str:
    """A store URL in a fresh schema."""
    return with_schema(pg_server, schema)


def _sql(server: str, schema: str, statement: str) -> None:
    with psycopg.connect(parse_postgres_url(server).conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(statement)


# -- the contract ---------------------------------------------------------------------------


@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
async def test_contract(check: ContractCheck, pg_url: str) -> None:
    async def opener() -> PostgresEventStore:
        return PostgresEventStore(pg_url)

    await check(opener)


# -- URLs -----------------------------------------------------------------------------------


def test_postgres_urls_open_without_io() -> None:
    store = open_store("postgresql://someone@db.invalid:5433/sessions?schema=team_a")
    assert isinstance(store, PostgresEventStore)
    assert store.target.schema == "team_a"
    assert store.url == "postgresql://someone@db.invalid:5433/sessions?schema=team_a"
    assert "schema" not in store.target.conninfo
    short = open_store("postgres://db.invalid/x")
    assert isinstance(short, PostgresEventStore) and short.target.schema is None
    override = PostgresEventStore("postgresql://db.invalid/x?schema=a", schema="b")
    assert override.target.schema == "b" and override.url.endswith("(schema b)")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://u:hunter2@db/x?foo=bar", "invalid URI query parameter"),
        ("postgresql://db:notaport/x", "not a TCP port"),
        ("postgresql:db", "use postgresql://"),
        ("postgresql://db/x?schema=", "non-empty"),
        ("postgresql://db/x?schema=a&schema=b", "once"),
        (f"postgresql://db/x?schema={'s' * 64}", "longer than 63 bytes"),
        ("postgresql://u:hunter2@db/x?password=hunter2&bogus=1", "invalid URI query parameter"),
    ],
)
def test_bad_urls_are_one_line_usage_errors_without_the_password(url: str, reason: str) -> None:
    with pytest.raises(UsageError) as info:
        open_store(url)
    message = str(info.value)
    assert reason in message and "\n" not in message
    assert "hunter2" not in message
    assert "bad PostgreSQL store URL 'postgres" in message


async def test_an_unreachable_server_is_one_line_naming_the_url_not_the_password() -> None:
    store = PostgresEventStore("postgresql://dsh:hunter2@127.0.0.1:1/nowhere?connect_timeout=2")
    assert "hunter2" not in repr(store) and "hunter2" not in repr(store.target)
    with pytest.raises(StoreError) as info:
        await store.exists("s")
    message = str(info.value)
    assert message.startswith("postgresql://dsh:***@127.0.0.1:1/nowhere")
    assert "hunter2" not in message and "\n" not in message
    await store.close()


# -- the version row and ownership ----------------------------------------------------------


async def test_a_new_schema_is_created_and_stamped(pg_server: str, schema: str, pg_url: str) -> None:
    store = PostgresEventStore(pg_url)
    await store.create(HEADER)
    await store.close()
    with psycopg.connect(parse_postgres_url(pg_server).conninfo) as conn:
        row = conn.execute(f'SELECT application, version FROM "{schema}".dsh_schema').fetchall()
        assert row == [("dsh", SCHEMA_VERSION)]
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)).fetchall()
        assert {t[0] for t in tables} == {"dsh_schema", "sessions", "events"}


@pytest.mark.parametrize(
    ("version", "match"),
    [
        (
            SCHEMA_VERSION + 1,
            rf"schema version {SCHEMA_VERSION + 1} is newer than this dsh reads .*upgrade dsh",
        ),
        (0, r"schema version 0 is not supported .*no migration"),
    ],
)
async def test_another_schema_version_is_refused(
    pg_server: str, schema: str, pg_url: str, version: int, match: str
) -> None:
    store = PostgresEventStore(pg_url)
    await store.create(HEADER)
    await store.close()
    _sql(pg_server, schema, f"UPDATE dsh_schema SET version = {version}")
    store = PostgresEventStore(pg_url)
    with pytest.raises(UnsupportedFormatError, match=match) as info:
        await store.load("s1")
    assert str(info.value).startswith(pg_url) and "\n" not in str(info.value)
    await store.close()


async def test_a_foreign_application_row_is_refused(pg_server: str, schema: str, pg_url: str) -> None:
    await PostgresEventStore(pg_url).list_sessions()
    _sql(pg_server, schema, "UPDATE dsh_schema SET application = 'other'")
    store = PostgresEventStore(pg_url)
    with pytest.raises(UnsupportedFormatError, match=r"is not a dsh session database .*'other'"):
        await store.list_sessions()
    await store.close()


async def test_same_named_tables_dsh_did_not_create_are_refused(
    pg_server: str, schema: str, pg_url: str
) -> None:
    _sql(pg_server, "public", f'CREATE SCHEMA "{schema}"')
    _sql(pg_server, schema, "CREATE TABLE sessions (id int)")
    store = PostgresEventStore(pg_url)
    with pytest.raises(UnsupportedFormatError, match=r"already holds tables dsh did not create \(sessions\)"):
        await store.list_sessions()
    await store.close()


async def test_the_search_path_option_of_libpq_selects_the_schema(pg_server: str, schema: str) -> None:
    sep = "&" if "?" in pg_server else "?"
    url = f"{pg_server}{sep}options=-csearch_path%3D{schema}"
    missing = PostgresEventStore(url)
    with pytest.raises(UsageError, match=r"no schema on the search_path exists .*\?schema=NAME"):
        await missing.list_sessions()
    await missing.close()
    _sql(pg_server, "public", f'CREATE SCHEMA "{schema}"')
    store = PostgresEventStore(url)
    await store.create(HEADER)
    await store.close()
    assert await _count(with_schema(pg_server, schema)) == 1


async def _count(url: str) -> int:
    store = PostgresEventStore(url)
    try:
        return len(await store.list_sessions())
    finally:
        await store.close()


async def test_event_data_is_stored_as_canonical_json_text(pg_server: str, schema: str, pg_url: str) -> None:
    data = {"z": 1.0, "a": [1e-7, 10**18, -0.0], "m": {"b": "é\u0000", "a": None}}
    store = PostgresEventStore(pg_url)
    await store.create(HEADER)
    await store.append("s1", [Event("session/title", 0, 1, data)])
    assert (await store.load("s1")).events[0].data == data
    await store.close()
    with psycopg.connect(parse_postgres_url(pg_server).conninfo) as conn:
        (raw,) = conn.execute(f'SELECT data FROM "{schema}".events').fetchone() or ("",)
    assert raw == '{"z":1.0,"a":[1e-7,1000000000000000000,-0.0],"m":{"b":"é\\u0000","a":null}}'


# -- many writers -----------------------------------------------------------------------------

WRITER = r"""
import asyncio, json, sys
from dsh.errors import SeqConflictError, SessionExistsError
from dsh.events import SessionHeader
from dsh.store.postgres import PostgresEventStore
from dsh.store.samples import completed_turn

async def main(url, sid, turns, tag, pause):
    store = PostgresEventStore(url)
    conflicts, errors = [], []
    try:
        try:
            await store.create(SessionHeader(id=sid, created_at=1, cwd="/w"))
        except SessionExistsError:
            pass
        print("ready", flush=True)
        sys.stdin.readline()
        done = 0
        next_seq = len(await store.read_from(sid, 0))
        while done < turns:
            events = completed_turn(next_seq, done + 1, reply=f"{tag} {done}")
            await asyncio.sleep(pause)  # the racers give each other a window
            try:
                await store.append(sid, events)
            except SeqConflictError as exc:
                conflicts.append(str(exc))
                next_seq += len(await store.read_from(sid, next_seq))
                continue
            next_seq += len(events)
            done += 1
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        await store.close()
    print(json.dumps({"conflicts": conflicts, "errors": errors}), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])))
"""

CONFLICT = re.compile(
    r"seq conflict on session 'shared': append starts at seq (\d+), "
    r"the store is at seq (\d+) \(another writer appended first\)"
)
TURNS = 50
TURN_EVENTS = 6


def _check_turns(events: Sequence[Event], sid: str) -> list[str]:
    """Seqs contiguous, whole turns never interleaved; returns each turn's reply tag."""
    assert [e.seq for e in events] == list(range(len(events))), f"{sid}: seqs are not contiguous"
    replies = []
    for i in range(0, len(events), TURN_EVENTS):
        turn = events[i : i + TURN_EVENTS]
        assert turn[0].type == "turn/start" and turn[-1].type == "turn/end", f"{sid}: turn at {i} torn"
        reply = turn[3].data["message"]["content"][0]["text"]
        assert all(e.data.get("turn") == turn[0].data["turn"] for e in turn if "turn" in e.data)
        replies.append(reply)
    return replies


async def test_many_processes_share_one_database(pg_url: str) -> None:
    """8 writers on their own sessions and 2 racing on one: contiguous, complete, no duplicates,
    and the race produced only clean seq conflicts. All 10 open the fresh schema at once."""
    own = [(f"w{i}", f"w{i}") for i in range(8)]
    racers = [("shared", "A"), ("shared", "B")]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, pg_url, sid, str(TURNS), tag, "0.002" if sid == "shared" else "0"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for sid, tag in [*own, *racers]
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        started = time.monotonic()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=60) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    elapsed = time.monotonic() - started
    reports = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0 and "Traceback" not in err, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert [r["errors"] for r in reports] == [[]] * len(procs)
    assert all(not r["conflicts"] for r in reports[:8]), "writers on their own sessions never conflict"
    conflicts = [c for r in reports[8:] for c in r["conflicts"]]
    assert conflicts, "the racers overlapped, so at least one append lost a race"
    for message in conflicts:
        match = CONFLICT.fullmatch(message)
        assert match is not None, message
        assert int(match[1]) < int(match[2]), message

    store = PostgresEventStore(pg_url)
    for sid, tag in own:
        events = (await store.load(sid)).events
        assert len(events) == TURNS * TURN_EVENTS
        assert _check_turns(events, sid) == [f"{tag} {i}" for i in range(TURNS)]
    shared = (await store.load("shared")).events
    assert len(shared) == 2 * TURNS * TURN_EVENTS
    replies = _check_turns(shared, "shared")
    assert sorted(replies) == sorted(f"{tag} {i}" for _, tag in racers for i in range(TURNS)), (
        "no loss, no dup"
    )
    for _, tag in racers:
        mine = [r for r in replies if r.startswith(f"{tag} ")]
        assert mine == [f"{tag} {i}" for i in range(TURNS)], "each racer's turns keep their order"
    summaries = {s.header.id: s.event_count for s in await store.list_sessions()}
    assert summaries == {sid: len((await store.load(sid)).events) for sid in summaries}
    await store.close()
    print(f"10 writers in {elapsed:.2f} s; {len(conflicts)} clean seq conflicts on the shared session")


async def test_two_handles_racing_in_one_process_lose_nothing(pg_url: str) -> None:
    first, second = PostgresEventStore(pg_url), PostgresEventStore(pg_url)
    await first.create(HEADER)
    turns = completed_turns(1)
    seen: list[str] = []

    async def writer(store: PostgresEventStore, tag: str) -> None:
        done = 0
        while done < 10:
            base = len(await store.read_from("s1", 0))
            events = [e.with_seq(base + i) for i, e in enumerate(turns)]
            events[0] = Event("turn/start", base, 1, {"turn": 1, "tag": f"{tag}{done}"})
            try:
                await store.append("s1", events)
            except StoreError as exc:
                assert "seq conflict on session 's1'" in str(exc)
                continue
            seen.append(f"{tag}{done}")
            done += 1

    await asyncio.gather(writer(first, "a"), writer(second, "b"))
    events = (await first.load("s1")).events
    assert [e.seq for e in events] == list(range(120))
    tags = [e.data["tag"] for e in events if e.type == "turn/start"]
    assert sorted(tags) == sorted(seen) and len(set(tags)) == 20
    await first.close()
    await second.close()


# -- fork across reconnects, and transfer to SQLite ------------------------------------------


async def test_fork_cut_survives_a_reconnect_and_exports_identically_via_sqlite(
    pg_url: str, tmp_path: Path
) -> None:
    store = PostgresEventStore(pg_url)
    await store.create(SessionHeader(id="parent", created_at=5, cwd="/w", agent_preset="coder"))
    done = completed_turns(3)
    await store.append("parent", [*done, *open_turn(len(done), 4)])
    child = await store.fork("parent", child_id="child", origin="subagent", created_at=9)
    cut = len(done)
    assert child.inherited_event_count == cut and child.header.is_seeded
    await store.append("child", completed_turns(1, start_seq=cut + 1, first_turn=4))
    await store.close()

    again = PostgresEventStore(pg_url)
    loaded = await again.load("child")
    assert loaded.inherited_event_count == cut and loaded.header.is_seeded
    assert loaded.events[: cut + 1] == child.events
    assert loaded.events[cut].type == "session/end-seed" and loaded.events[cut].data == {"inherited": True}
    assert {s.header.id: s.inherited_event_count for s in await again.children("parent")} == {"child": cut}

    exported = await export_session(again, "child")
    path = tmp_path / "child.jsonl"
    await export_session_file(again, "child", path)
    assert path.read_bytes() == exported
    await again.close()

    sqlite = SqliteEventStore(tmp_path / "copy.db")
    imported = await import_log(sqlite, path)
    assert imported.inherited_event_count == cut
    assert await export_session(sqlite, "child") == exported
    await sqlite.close()
    reopened = SqliteEventStore(tmp_path / "copy.db")
    assert await export_session(reopened, "child") == exported
    assert (await reopened.load("child")).inherited_event_count == cut
    await reopened.close()


async def test_a_released_lease_is_free_at_once_for_another_connection(pg_url: str) -> None:
    first, second = PostgresEventStore(pg_url), PostgresEventStore(pg_url)
    holders = (first, second)
    for n in range(40):  # closing a connection frees its locks only when the server gets to it
        lease = await holders[n % 2].lease("s")
        await lease.release()
    await first.close()
    await second.close()


async def test_continue_reads_an_inherited_last_event_as_the_listing_does(
    pg_server: str, schema: str, pg_url: str
) -> None:
    """A session whose events are all inherited by reference has no last time of its own in the
    summary: ``--continue`` then follows the whole listing's rule (the inherited event's time),
    never ranks it by a missing time."""
    store = PostgresEventStore(pg_url)
    events = [Event(e.type, e.seq, 5_000, e.data, e.surface_op) for e in completed_turns(2)]
    await store.create(SessionHeader(id="p", created_at=1_000, cwd="/w"), events)
    await store.fork("p", child_id="k", created_at=1_500)
    await store.create(SessionHeader(id="q", created_at=6_000, cwd="/w"))  # no event: 6,000
    await store.close()
    _sql(pg_server, schema, "DELETE FROM events WHERE session_id = 'k'")  # only the prefix, by reference
    _sql(pg_server, schema, f"UPDATE sessions SET next_seq = {len(events)} WHERE id = 'k'")
    store = PostgresEventStore(pg_url)
    assert await latest_top_level(store, "/w") == "q" == await latest_listed(store, "/w")
    await store.close()

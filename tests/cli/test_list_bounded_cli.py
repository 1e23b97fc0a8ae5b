"""``dsh sessions list -n N`` reads only the N sessions it shows; plain columns for any count."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from dsh import jsonx
from dsh.cli.columns import Column, layout
from dsh.cli.list_cmd import COLUMNS
from dsh.events import Event, SessionHeader
from dsh.session.bill import Bill
from dsh.session.digest import Derived, digest_from_json, digest_json
from dsh.session.usage import Ledger
from dsh.store.contract_surface import long_log
from dsh.store.samples import completed_turns
from dsh.store.sqlite import SqliteEventStore
from tests.cli.conftest import Dsh, assert_user_error


async def _three(db: Path) -> None:
    store = SqliteEventStore(db)
    for i, sid in enumerate(("oldest", "middle", "newest")):
        await store.create(SessionHeader(id=sid, created_at=1_000 + i, cwd="/work"), completed_turns(1))
    await store.close()


def test_list_n_reads_only_the_sessions_it_shows(dsh_sqlite: Dsh) -> None:
    db = Path(dsh_sqlite.store.removeprefix("sqlite:"))
    db.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(_three(db))
    with sqlite3.connect(db) as conn:  # the oldest session's events cannot be read any more
        conn.execute("UPDATE events SET data = '{bad' WHERE session_id = 'oldest' AND seq = 2")
    shown = dsh_sqlite("sessions", "list", "-n", "2").ok().stdout.splitlines()
    assert [line.split()[0] for line in shown[1:]] == ["middle", "newest"]
    rows = dsh_sqlite("sessions", "list", "-n", "2", "--json").json()
    assert [row["id"] for row in rows] == ["middle", "newest"]
    assert_user_error(dsh_sqlite("sessions", "list"), "oldest", "bad JSON")
    with sqlite3.connect(db) as conn:  # nor its row of the sessions table
        conn.execute("UPDATE sessions SET delegation_depth = -1 WHERE id = 'oldest'")
    rows = dsh_sqlite("sessions", "list", "-n", "2", "--json").json()
    assert [row["id"] for row in rows] == ["middle", "newest"], "-n reads no other session's row"


def test_columns_align_cap_and_cut_the_flexible_one() -> None:
    columns = (Column("id"), Column("n", right=True), Column("model", max_width=5), Column("t", flex=True))
    rows = [["a", "7", "deepseek-chat", "一二三四五六七八九十一二三四五六"], ["bbb", "10", "m", "short"]]
    lines = layout(columns, rows, 30)
    assert lines == [
        "id    n  model  t",
        "a     7  deep…  一二三四五六…",
        "bbb  10  m      short",
    ]
    assert all(line == line.rstrip() for line in lines)


def test_a_listing_keeps_digests_and_reads_only_sessions_that_changed(dsh_sqlite: Dsh) -> None:
    db = Path(dsh_sqlite.store.removeprefix("sqlite:"))
    db.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(_three(db))
    first = dsh_sqlite("sessions", "list", "--json").json()
    with sqlite3.connect(db) as conn:
        kept = dict(conn.execute("SELECT session_id, event_count FROM session_digests"))
        conn.execute("UPDATE events SET data = '{bad' WHERE session_id = 'oldest' AND seq = 2")
    assert kept == {"oldest": 6, "middle": 6, "newest": 6}
    assert dsh_sqlite("sessions", "list", "--json").json() == first, "kept digests, events not read"
    asyncio.run(_retitle(db, "newest", "a new title"))
    rows = {row["id"]: row for row in dsh_sqlite("sessions", "list", "--json").json()}
    assert rows["newest"]["title"] == "a new title", "a session that grew is derived again"
    dsh_sqlite("sessions", "rm", "middle", "--yes").ok()
    with sqlite3.connect(db) as conn:
        left = [sid for (sid,) in conn.execute("SELECT session_id FROM session_digests ORDER BY 1")]
    assert left == ["newest", "oldest"], "a deleted session's digest goes with it"


async def _retitle(db: Path, sid: str, title: str) -> None:
    store = SqliteEventStore(db)
    count = len((await store.load(sid)).events)
    titled = Event("session/title", count, 2_000, {"title": title, "source": {"kind": "user"}})
    await store.append(sid, [titled])
    await store.close()


def test_a_digest_round_trips_and_only_a_settled_one_is_kept() -> None:
    ledger = Ledger()
    ledger.add(("deepseek-chat", "deepseek"), {"inputTokens": 12, "cacheReadTokens": 3}, 4, 60_000)
    ledger.add(("deepseek-chat", "deepseek"), {"inputTokens": 5}, 9, 61_000)
    settled = Derived("t", "p", "m", 5, "completed", None, None, None, 2, bill=Bill.of(ledger))
    back = digest_from_json(jsonx.loads(jsonx.dumps(digest_json(settled))))
    assert back == settled and back is not None and back.bill == settled.bill
    assert back.bill.calls == 2 and back.bill.tokens.input == 17
    assert digest_json(replace(settled, status="running")) is None
    assert digest_json(replace(settled, status="interrupted")) is None
    assert digest_from_json({"title": 1}) is None
    older = {**digest_json(settled), "ledger": ledger.to_wire()}  # type: ignore[dict-item]
    del older["bill"]
    assert digest_from_json(older) is None, "a digest an older dsh kept (every call) is derived again"


def test_sessions_tree_never_reads_a_stream(dsh_sqlite: Dsh) -> None:
    db = Path(dsh_sqlite.store.removeprefix("sqlite:"))
    db.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(_long(db))
    with sqlite3.connect(db) as conn:  # the kept-apart streams cannot be read any more
        assert conn.execute("UPDATE events SET tail = X'00' WHERE tail IS NOT NULL").rowcount == 2
    tree = dsh_sqlite("sessions", "tree", "long").ok().stdout
    assert "long" in tree
    assert dsh_sqlite("sessions", "tree", "--json").json()[0]["eventCount"] == 13
    assert_user_error(dsh_sqlite("log", "long"), "long")


async def _long(db: Path) -> None:
    store = SqliteEventStore(db)
    await store.create(SessionHeader(id="long", created_at=1_000, cwd="/work"), long_log())
    await store.close()


def test_continue_finds_the_latest_session_by_its_summary(tmp_path: Path) -> None:
    """``dsh run -c`` compares sessions by the last event's time the listing read: it decodes no
    other session's events (here the older one's last event cannot be decoded at all)."""
    import os
    import subprocess
    import sys

    from dsh.testing.server import OpenAICompatServer
    from dsh.testing.wire import stream_reply

    db = tmp_path / "s.db"
    asyncio.run(_two_in(db, tmp_path))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET data = '{bad' WHERE session_id = 'older' AND seq = 5")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_STORE": f"sqlite:{db}", "DSH_API_KEY": "k", "XDG_DATA_HOME": str(tmp_path / "data")})
    with OpenAICompatServer(handler=lambda _r: stream_reply(text="ok")) as server:
        argv = [
            sys.executable,
            "-m",
            "dsh.cli",
            "run",
            "again",
            "-c",
            "--json",
            "--base-url",
            server.base_url,
        ]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"sessionId":"newer"' in done.stdout.splitlines()[-1].replace(" ", "")


async def _two_in(db: Path, cwd: Path) -> None:
    store = SqliteEventStore(db)
    for i, sid in enumerate(("older", "newer")):
        turns = [replace(e, time=e.time + i * 1_000) for e in completed_turns(1)]
        await store.create(SessionHeader(id=sid, created_at=1_000 + i, cwd=str(cwd)), turns)
    await store.close()


def test_a_listing_over_kept_digests_loads_no_fold_and_no_other_backend(dsh_sqlite: Dsh) -> None:
    """Reading kept digests needs neither the timeline fold nor the price table's source nor
    another store's backend: ``sessions list`` imports them only when a session must be derived."""
    import json
    import subprocess
    import sys

    db = Path(dsh_sqlite.store.removeprefix("sqlite:"))
    db.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(_three(db))
    dsh_sqlite("sessions", "list").ok()  # derives the three and keeps their digests
    code = (
        "import sys, json\nfrom dsh.cli.app import app\n"
        f"for argv in (['sessions', 'list', '--store', 'sqlite:{db}'], ['sessions', 'list', '-n', '2', "
        f"'--store', 'sqlite:{db}']):\n"
        "    try:\n        app(argv, standalone_mode=False)\n    except SystemExit:\n        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "oldest" in done.stdout
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    heavy = {"dsh.session.timeline.fold", "dsh.session.timeline", "dsh.store.jsonl", "genai_prices"}
    assert sorted(loaded & heavy) == []


def test_a_piped_listing_prints_what_rich_would_without_importing_it(dsh_sqlite: Dsh) -> None:
    db = Path(dsh_sqlite.store.removeprefix("sqlite:"))
    db.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(_three(db))  # no model: the "—" mark in every row
    asyncio.run(_retitle(db, "middle", "a title long enough to be cut by any width narrower than Rich's"))
    plain = dsh_sqlite("sessions", "list").ok().stdout
    assert "narrower than Rich's" in plain, "not cut"
    dsh_sqlite.env["TTY_COMPATIBLE"] = "0"  # Rich's console decides: no terminal
    assert dsh_sqlite("sessions", "list").ok().stdout == plain
    assert plain.splitlines()[0].split() == [c.header for c in COLUMNS]
    del dsh_sqlite.env["TTY_COMPATIBLE"]
    code = (
        "import runpy, sys\n"
        "sys.argv = ['dsh', 'sessions', 'list', '-n', '2']\n"
        "try:\n    runpy.run_module('dsh.cli', run_name='__main__')\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] == 'rich'), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=dsh_sqlite.env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "newest" in done.stdout
    assert done.stderr.strip() == "[]", "a piped listing imports no Rich"


def test_sessions_tree_reads_no_events_of_a_session_alone_in_its_tree(dsh_sqlite: Dsh) -> None:
    """A top-level session with no children is a tree of one node: its summary row says all the
    tree shows (its id, cut and event count); only a tree with children is read to label them."""
    db = Path(dsh_sqlite.store.removeprefix("sqlite:"))
    db.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(_three(db))
    dsh_sqlite("sessions", "fork", "middle", "--id", "kid").ok()
    with sqlite3.connect(db) as conn:  # the lone sessions' events cannot be read any more
        conn.execute("UPDATE events SET data = '{bad' WHERE session_id IN ('oldest', 'newest') AND seq = 2")
    out = dsh_sqlite("sessions", "tree", "--json").ok()
    assert out.stderr == ""
    roots = {node["id"]: node for node in out.json()}
    assert list(roots) == ["oldest", "middle", "newest"]
    assert roots["oldest"] == {
        "id": "oldest",
        "kind": None,
        "state": None,
        "branchTurn": None,
        "inheritedEventCount": 0,
        "eventCount": 6,
        "children": [],
    }
    (kid,) = roots["middle"]["children"]
    assert (kid["id"], kid["kind"], kid["branchTurn"], kid["inheritedEventCount"]) == ("kid", "fork", 1, 6)
    text = dsh_sqlite("sessions", "tree").ok().stdout
    assert text.splitlines() == [
        "oldest  cut 0, 6 events",
        "middle  cut 0, 6 events",
        "└── fork kid  branched at turn 1, cut 6, 7 events",
        "newest  cut 0, 6 events",
    ]

"""``dsh sessions`` run as a subprocess: import → list → show → tree → fork → export → inspect, and errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh.events import Event, SessionHeader, fork_cut
from dsh.store import LoadedSession, encode_log
from dsh.store.logfile import load_log_file

from .conftest import Dsh, assert_user_error, raw_type_counts, store_url

FORK_PARENT = "96cf59c9-b347-48b9-b234-a5200913ad05"
FORK_CHILD = "ada8966c-9fa3-441b-8721-37ff1e795e6a"
SPAWN_PARENT = "5138ed0d-e86e-4a7d-b75b-803307e92b17"
SPAWN_CHILD = "ea339828-7885-42e1-9083-4355e6f1708d"
SESSION_KEYS = {
    "id",
    "parentSession",
    "isSeeded",
    "inheritedEventCount",
    "eventCount",
    "createdAt",
    "cwd",
    "origin",
    "delegationDepth",
    "agentPreset",
}
LIST_KEYS = {"title", "firstPrompt", "model", "lastActivity", "status", "children", "compactions"} | {
    "calls", "tokens", "cost", "tree",
}  # fmt: skip


def subagent_logs(upstream: Path) -> list[Path]:
    return [
        upstream / "subagent-fork-in-process" / "session.jsonl",
        upstream / "subagent-fork-in-process" / "session.1.jsonl",
        upstream / "subagent-spawn-in-process" / "session.jsonl",
        upstream / "subagent-spawn-in-process" / "session.1.jsonl",
    ]


def node(forest: list[dict[str, Any]], sid: str) -> dict[str, Any]:
    (found,) = [n for n in forest if n["id"] == sid]
    return found


def test_round_trip(dsh: Dsh, upstream: Path, tmp_path: Path) -> None:
    logs = subagent_logs(upstream)
    expected = {load_log_file(p).header.id: p for p in logs}

    # import keeps the recorded ids and cuts
    imported = dsh("sessions", "import", *logs, "--json").ok().json()
    assert [s["id"] for s in imported] == [FORK_PARENT, FORK_CHILD, SPAWN_PARENT, SPAWN_CHILD]
    assert [s["path"] for s in imported] == [str(p) for p in logs]
    assert {s["id"]: s["inheritedEventCount"] for s in imported}[FORK_CHILD] == 42

    duplicate, listing, showing, tree = dsh.many(
        ("sessions", "import", logs[1]),
        ("sessions", "list", "--json"),
        ("sessions", "show", FORK_CHILD, "--events", "--json"),
        ("sessions", "tree", "--json"),
    )

    # a second import of a stored id is refused and names it
    assert_user_error(duplicate, FORK_CHILD, "already exists", str(logs[1]))

    # list
    listed = {s["id"]: s for s in listing.ok().json()}
    assert set(listed) == set(expected)
    for sid, path in expected.items():
        assert set(listed[sid]) == SESSION_KEYS | LIST_KEYS
        assert listed[sid]["eventCount"] == sum(raw_type_counts(path).values())
    child = listed[FORK_CHILD]
    assert child["isSeeded"] is True and child["inheritedEventCount"] == 42
    assert child["parentSession"] == FORK_PARENT and child["origin"] == "subagent"
    assert child["delegationDepth"] == 1
    assert listed[SPAWN_CHILD]["isSeeded"] is False and listed[SPAWN_CHILD]["inheritedEventCount"] == 0
    assert listed[FORK_PARENT]["parentSession"] is None

    # show --events: wire events, the tagged marker at the cut
    shown = showing.ok().json()
    assert {k: shown[k] for k in SESSION_KEYS} == {k: child[k] for k in SESSION_KEYS}
    assert shown["types"] == dict(sorted(raw_type_counts(expected[FORK_CHILD]).items()))
    assert shown["children"] == [] and shown["warnings"] == []
    events = shown["events"]
    assert [e["seq"] for e in events] == list(range(99))
    assert events[42]["type"] == "session/end-seed" and events[42]["data"] == {"inherited": True}

    # tree: fork child as fork with cut 42, spawn child as spawn with cut 0
    forest = tree.ok().json()
    assert {n["id"] for n in forest} == {FORK_PARENT, SPAWN_PARENT}
    fork_root = node(forest, FORK_PARENT)
    assert fork_root["kind"] is None and fork_root["inheritedEventCount"] == 0
    assert fork_root["children"] == [
        {
            "id": FORK_CHILD,
            "kind": "fork",
            "state": None,
            "branchTurn": 1,
            "inheritedEventCount": 42,
            "eventCount": 99,
            "children": [],
        }
    ]
    assert node(forest, SPAWN_PARENT)["children"] == [
        {
            "id": SPAWN_CHILD,
            "kind": "spawn",
            "state": None,
            "branchTurn": None,
            "inheritedEventCount": 0,
            "eventCount": 40,
            "children": [],
        }
    ]

    # fork at the parent's last completed turn
    prefix = fork_cut(load_log_file(expected[FORK_PARENT]).events)
    forked = dsh("sessions", "fork", FORK_PARENT, "--id", "cli-fork", "--json").ok().json()
    assert set(forked) == SESSION_KEYS
    assert forked["id"] == "cli-fork" and forked["parentSession"] == FORK_PARENT
    assert forked["isSeeded"] is True
    assert forked["inheritedEventCount"] == prefix and forked["eventCount"] == prefix + 1

    # export (a file for SQLite, stdout for JSONL) → inspect → import elsewhere: same counts and cut
    exported = tmp_path / "child.jsonl"
    to_file = dsh.store.startswith("sqlite:")
    export_args = ("sessions", "export", FORK_CHILD, *(("-o", str(exported)) if to_file else ()))
    subtree, export = dsh.many(("sessions", "tree", FORK_PARENT, "--json"), export_args)
    assert subtree.ok().json()["id"] == FORK_PARENT
    assert {(c["id"], c["kind"], c["inheritedEventCount"]) for c in subtree.json()["children"]} == {
        (FORK_CHILD, "fork", 42),
        ("cli-fork", "fork", prefix),
    }
    if to_file:
        assert FORK_CHILD in export.ok().stdout and str(exported) in export.stdout
    else:
        exported.write_text(export.ok().stdout, encoding="utf-8")
    other = store_url("jsonl" if to_file else "sqlite", tmp_path / "other")
    inspected, reimported = dsh.many(
        ("log", "inspect", exported, "--json"), ("sessions", "import", exported, "--json", "--store", other)
    )
    info = inspected.ok().json()
    assert info["version"] == 2
    assert info["isSeeded"] is True and info["inheritedEventCount"] == 42 and info["eventCount"] == 99
    assert info["types"] == shown["types"]
    (again,) = reimported.ok().json()
    assert {k: again[k] for k in SESSION_KEYS} == {k: child[k] for k in SESSION_KEYS}


def test_human_output_and_all_or_nothing_import(dsh_sqlite: Dsh, upstream: Path, tmp_path: Path) -> None:
    dsh = dsh_sqlite
    good = upstream / "text-turn" / "session.jsonl"
    good_id = load_log_file(good).header.id
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text().replace('"type":"turn/start"', '"type":"turn/start",,'))
    opened = tmp_path / "open.jsonl"
    opened.write_text(
        '{"type":"session","version":2,"id":"open","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'
        '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
    )

    # a refused file, or the same id twice, stores nothing from the batch
    twice, broken = dsh.many(("sessions", "import", good, good), ("sessions", "import", good, bad))
    assert str(good) in assert_user_error(twice, good_id, "already exists")
    assert_user_error(broken, "bad.jsonl", "line")

    out = dsh("sessions", "import", *subagent_logs(upstream), opened).ok().stdout
    assert f"imported {FORK_CHILD} from " in out and "cut 42" in out

    # a fork of a session with no completed turn is empty and unseeded
    out = dsh("sessions", "fork", "open", "--id", "empty").ok().stdout
    assert "open -> empty" in out and "cut 0" in out

    tree, listing, show = dsh.many(
        ("sessions", "tree"), ("sessions", "list"), ("sessions", "show", FORK_PARENT)
    )
    lines = tree.ok().stdout.splitlines()
    (fork_line,) = [line for line in lines if FORK_CHILD in line]
    assert "fork" in fork_line and "cut 42" in fork_line
    (spawn_line,) = [line for line in lines if SPAWN_CHILD in line]
    assert "spawn" in spawn_line and "cut 0" in spawn_line
    (empty_line,) = [line for line in lines if "empty" in line]
    assert "fork" in empty_line and "cut 0, 0 events" in empty_line

    rows = [line.split() for line in listing.ok().stdout.splitlines()]
    assert rows[0] == ["id", "status", "kids", "compacted", "active", "cost", "model", "title"]
    assert len(rows) == 1 + 6 and not any(good_id.startswith(row[0]) for row in rows[1:])
    (row,) = [row for row in rows if FORK_CHILD.startswith(row[0])]
    assert len(row[0]) == 8 and row[1:4] == ["completed", "0", "0"]
    assert row[4:6] == ["...", "ago"] or row[5] == "ago", row
    assert row[6].startswith("$") or row[6] == "unknown", row
    assert row[8:11] == ["↳", "fork", "of"] and FORK_PARENT.startswith(row[11].rstrip(":")), row
    (parent,) = [row for row in rows if FORK_PARENT.startswith(row[0])]
    assert parent[2] == "1", "the parent counts its child"

    fields = {line.split()[0]: line.split()[1:] for line in show.ok().stdout.splitlines() if line.strip()}
    assert fields["children"] == [FORK_CHILD]
    assert fields["kind"] == ["—"] and fields["seeded"] == ["no"]


def test_unknown_ids_and_bad_stores_are_one_line_errors(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello\n" * 100)
    commands = [("show", "nope-1"), ("tree", "nope-2"), ("fork", "nope-3"), ("export", "nope-4")]
    dsh_sqlite("sessions", "fork", "nope-0")  # a writing command creates the (empty) store
    *unknown, bad_url, foreign = dsh_sqlite.many(
        *[("sessions", *command) for command in commands],
        ("sessions", "list", "--store", "bogus:x"),
        ("sessions", "list", "--store", f"sqlite:{not_a_db}"),
    )
    for (_, sid), result in zip(commands, unknown, strict=True):
        assert_user_error(result, sid, "not found")
    assert_user_error(bad_url, "bogus:x")
    assert_user_error(foreign, str(not_a_db))


def test_import_of_several_files_is_all_or_nothing(dsh: Dsh, tmp_path: Path) -> None:
    def log(sid: str, created_at: int) -> Path:
        path = tmp_path / f"{sid}.jsonl"
        path.write_text(
            f'{{"type":"session","version":2,"id":"{sid}","createdAt":{created_at},"isSeeded":false,'
            '"delegationDepth":0}\n{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
        )
        return path

    # the third file decodes, but the store refuses its header (createdAt beyond 64 bits)
    a, b, c = log("a", 1), log("b", 2), log("c", 2**63)
    assert_user_error(dsh("sessions", "import", a, b, c), "64 bits")
    listed = dsh("sessions", "list", "--json")  # a JSONL directory is not even created
    assert listed.stdout.strip() == "[]" or "no store at" in listed.stderr, (
        "nothing of the refused batch is stored"
    )
    imported = dsh("sessions", "import", a, b, "--json").json()
    assert [s["id"] for s in imported] == ["a", "b"]


def test_show_and_tree_of_one_session_read_only_what_they_need(tmp_path: Path) -> None:
    dsh = Dsh(store_url("jsonl", tmp_path / "store"), tmp_path)
    root = tmp_path / "store" / "sessions"
    root.mkdir(parents=True)
    turn = [
        Event("turn/start", 0, 1, {"turn": 1}),
        Event("turn/end", 1, 2, {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    for sid, created in (("a", 1), ("big", 3)):
        session = LoadedSession(SessionHeader(id=sid, created_at=created), 0, turn)
        (root / f"{sid}.jsonl").write_bytes(encode_log(session))
    dsh("sessions", "fork", "a", "--id", "kid").ok()
    big = root / "big.jsonl"
    big.write_bytes(big.read_bytes().replace(b'"turn/start"', b'"turn/start",,'))  # a corrupt body

    everything = dsh("sessions", "tree", "--json").ok()
    assert "big.jsonl" in everything.stderr, "a listing of everything reads (and skips) it"
    for command in (("tree", "a", "--json"), ("show", "a", "--json"), ("tree", "kid", "--json")):
        out = dsh("sessions", *command).ok()
        assert out.stderr == "", (command, out.stderr)
    subtree = dsh("sessions", "tree", "a", "--json").json()
    assert subtree["id"] == "a" and [c["id"] for c in subtree["children"]] == ["kid"]
    assert subtree["children"][0]["kind"] == "fork" and subtree["children"][0]["inheritedEventCount"] == 2
    assert dsh("sessions", "show", "a", "--json").json()["children"] == ["kid"]


def test_unknown_header_fields_are_kept_through_import_and_export(dsh: Dsh, tmp_path: Path) -> None:
    source = tmp_path / "titled.jsonl"
    source.write_text(
        '{"type":"session","version":2,"id":"titled","createdAt":1,"isSeeded":false,'
        '"delegationDepth":0,"title":"A title","x":{"y":[1,2]}}\n'
        '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
    )
    dsh("sessions", "import", source).ok()
    exported = dsh("sessions", "export", "titled").ok().stdout
    assert exported == source.read_text()


def test_import_of_a_placeholder_id_stores_and_prints_a_real_one(dsh_sqlite: Dsh, upstream: Path) -> None:
    """The original's snapshot logs carry the template token ``{{sessionId}}`` as their id: no
    id of any session. The import gives such a log a fresh id and prints that one; two such
    logs are two sessions."""
    logs = [upstream / "error-finish" / "session.jsonl", upstream / "bash-spill" / "session.jsonl"]
    assert {load_log_file(p).header.id for p in logs} == {"{{sessionId}}"}
    out = dsh_sqlite("sessions", "import", *logs).ok().stdout
    assert "{{" not in out, out
    ids = [line.split()[1] for line in out.splitlines()]
    assert len(ids) == 2 and ids[0] != ids[1] and all(len(i) == 36 and i.count("-") == 4 for i in ids), ids
    listed = {s["id"] for s in dsh_sqlite("sessions", "list", "--json").json()}
    assert listed == set(ids)
    (again,) = dsh_sqlite("sessions", "import", logs[0], "--json").json()
    assert again["id"] not in listed and "{{" not in again["id"]

"""#36 item 10: parentSession cycles and untrusted session ids, through the CLI and the viewer.

A session naming itself (or a chain naming back) as its parent is refused at import; a store
that already holds a cycle (written by hand, by an older dsh) still reads: every lineage walk
visits each session once. A malformed id (10k characters, a path separator, a control
character) is one error line on every command and a 404 from ``dsh ui``, never a traceback
and never a path outside the store.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.patience import HTTP_TIMEOUT, get_when_up, patience

from .conftest import Dsh, assert_user_error

SUBAGENT_TURN: list[dict[str, Any]] = [
    {"type": "turn/start", "seq": 0, "time": 5, "data": {"turn": 1}},
    {"type": "step/start", "seq": 1, "time": 5, "data": {"turn": 1, "step": 1}},
    {"type": "user/message", "seq": 2, "time": 6, "surfaceOp": "append",
     "data": {"role": "user", "content": [{"type": "text", "text": "go"}], "source": {"kind": "user"},
              "id": "u"}},
    {"type": "tool/call", "seq": 3, "time": 7,
     "data": {"turn": 1, "step": 1, "callId": "c1", "name": "subagent", "arguments": '{"prompt": "x"}'}},
    {"type": "tool/result", "seq": 4, "time": 8, "surfaceOp": "append", "sourceEventSeqs": [3],
     "data": {"turn": 1, "step": 1, "message": {"role": "user", "content": [
         {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "done"}],
          "isError": False}]}}},
    {"type": "step/end", "seq": 5, "time": 9, "data": {"turn": 1, "step": 1}},
    {"type": "turn/end", "seq": 6, "time": 9, "data": {"turn": 1, "reason": {"kind": "completed"}}},
]  # fmt: skip
"""A completed turn that delegated once (so a transcript splices the child in)."""


def _log(sid: str, parent: str | None, created_at: int = 1) -> str:
    header: dict[str, Any] = {"type": "session", "version": 2, "id": sid, "createdAt": created_at,
                              "cwd": "/w", "isSeeded": False, "delegationDepth": 0}  # fmt: skip
    if parent is not None:
        header.update(parentSession=parent, origin="subagent", delegationDepth=1)
    return "".join(json.dumps(line) + "\n" for line in [header, *SUBAGENT_TURN])


def _write(path: Path, sid: str, parent: str | None, created_at: int = 1) -> Path:
    path.write_text(_log(sid, parent, created_at), encoding="utf-8")
    return path


def _no_sessions(dsh: Dsh) -> None:
    listed = dsh("sessions", "list", "--json")
    if listed.code == 1 and "no store at" in listed.stderr:
        return  # the refused import created nothing at all (read-only commands never create one)
    assert listed.json() == []


def test_a_session_naming_itself_as_its_parent_is_refused_at_import(dsh: Dsh, tmp_path: Path) -> None:
    path = _write(tmp_path / "self.jsonl", "loop-1", "loop-1")
    assert_user_error(dsh("sessions", "import", path), str(path), "loop-1", "itself as its parent")
    _no_sessions(dsh)


def test_an_import_closing_a_cycle_is_refused(dsh: Dsh, tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", "cyc-a", "cyc-b")
    b = _write(tmp_path / "b.jsonl", "cyc-b", "cyc-a", created_at=2)
    assert_user_error(dsh("sessions", "import", a, b), "cyc-a", "cycle")
    _no_sessions(dsh)
    dsh("sessions", "import", a).ok()  # an orphan (its parent not stored) is fine ...
    line = assert_user_error(dsh("sessions", "import", b), "cyc-b", "cycle")  # ... closing the loop is not
    assert "cyc-b -> cyc-a -> cyc-b" in line
    assert [s["id"] for s in dsh("sessions", "list", "--json").json()] == ["cyc-a"]


def _plant_cycles(dsh: Dsh, tmp_path: Path) -> None:
    """Store a session that is its own parent and a two-session cycle, bypassing the import check."""
    kind, _, where = dsh.store.partition(":")
    if kind == "jsonl":
        root = Path(where)
        dsh("sessions", "import", _write(tmp_path / "seed.jsonl", "seed", None)).ok()  # creates the store
        _write(root / "self.jsonl", "self", "self")
        _write(root / "two-a.jsonl", "two-a", "two-b", 2)
        _write(root / "two-b.jsonl", "two-b", "two-a", 3)
        return
    for sid, parent, at in (("self", "other", 1), ("two-a", None, 2), ("two-b", "two-a", 3)):
        dsh("sessions", "import", _write(tmp_path / f"{sid}.jsonl", sid, parent, at)).ok()
    with sqlite3.connect(where) as db:  # what an older dsh (or a hand edit) could leave
        db.execute("UPDATE sessions SET parent_session = 'self' WHERE id = 'self'")
        db.execute("UPDATE sessions SET parent_session = 'two-b' WHERE id = 'two-a'")


def test_every_reading_command_survives_a_stored_cycle(dsh: Dsh, tmp_path: Path) -> None:
    _plant_cycles(dsh, tmp_path)
    commands = (
        ("log",),
        ("log", "--children"),
        ("sessions", "show"),
        ("sessions", "show", "--transcript"),
        ("sessions", "tree"),
        ("sessions", "export"),
        ("sessions", "export", "--format", "json"),
        ("sessions", "export", "--format", "markdown"),
    )
    for n, verb in enumerate(commands):  # the lineage walk has one home: the two cycle kinds in turn
        sid = ("self", "two-a")[n % 2]
        head = 1 if verb[0] == "log" else 2
        command = (*verb[:head], sid, *verb[head:])
        out = dsh(*command).ok()
        assert "RecursionError" not in out.stderr and out.stdout, command
    for sid in ("self", "two-a"):  # and the deepest walk on both
        assert dsh("log", sid, "--children").ok().stdout
    assert "done" in dsh("log", "self").ok().stdout
    document = json.loads(dsh("sessions", "export", "two-a", "--format", "json").ok().stdout)
    assert document["children"][0]["session"]["id"] == "two-b"
    assert document["children"][0]["children"] == [], "the cycle is not followed back to two-a"
    tree = dsh("sessions", "tree", "--json").json()
    assert {"self", "two-a"} <= {node["id"] for node in tree}
    dsh("sessions", "list").ok()


BAD_IDS = {
    "10k": "x" * 10_000,
    "traversal": "../../outside/secret",
    "slash": "a/b",
    "backslash": "a\\b",
    "control": "a\x01b",
    "dotdot": "..",
}


def test_a_malformed_id_is_one_line_on_every_command(dsh: Dsh, tmp_path: Path) -> None:
    """Every command refuses a malformed id in one line (the id rule has one home,
    ``dsh.ids.check_session_id``: each command is run with one kind of bad id, the kinds in
    turn, so every command and every kind is seen on each store)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    _write(outside / "secret.jsonl", "../../outside/secret", None)
    before = sorted(p.name for p in outside.iterdir())
    dsh("sessions", "import", _write(tmp_path / "ok.jsonl", "ok-1", None)).ok()
    kinds = sorted(BAD_IDS)
    commands: list[tuple[str, ...]] = [  # BAD marks where the bad id goes
        ("log", "BAD"),
        ("sessions", "show", "BAD"),
        ("sessions", "tree", "BAD"),
        ("sessions", "export", "BAD"),
        ("sessions", "fork", "BAD"),
        ("sessions", "fork", "ok-1", "--id", "BAD"),
        ("sessions", "tail", "BAD"),
        ("sessions", "rm", "BAD", "--yes"),
        ("run", "hi", "--resume", "BAD", "--base-url", "http://127.0.0.1:9", "--api-key", "k"),
    ]
    assert len(commands) >= len(kinds), "every kind of bad id is tried"
    for n, command in enumerate(commands):
        kind = kinds[n % len(kinds)]
        line = assert_user_error(dsh(*(BAD_IDS[kind] if arg == "BAD" else arg for arg in command)))
        assert "invalid" in line and len(line) < 300, (kind, n, line)
    assert sorted(p.name for p in outside.iterdir()) == before
    assert [s["id"] for s in dsh("sessions", "list", "--json").json()] == ["ok-1"]


def test_an_import_of_a_malformed_id_names_the_file(dsh: Dsh, tmp_path: Path) -> None:
    for n, bad in enumerate(("x" * 10_000, "../../etc/passwd", "a\x00b")):
        path = _write(tmp_path / f"bad{n}.jsonl", bad, None)
        assert_user_error(dsh("sessions", "import", path), str(path), "invalid session id")
        parent = _write(tmp_path / f"badp{n}.jsonl", f"child-{n}", bad)
        assert_user_error(dsh("sessions", "import", parent), str(parent), "invalid parent session id")
    _no_sessions(dsh)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_the_viewer_answers_404_for_malformed_ids(tmp_path: Path, kind: str) -> None:
    dsh = Dsh(f"jsonl:{tmp_path / 'j'}" if kind == "jsonl" else f"sqlite:{tmp_path / 's.db'}", tmp_path)
    dsh("sessions", "import", _write(tmp_path / "ok.jsonl", "ok-1", None)).ok()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsh.cli", "ui", "--store", dsh.store, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**dsh.env, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(" at ", 1)[1].split(" ", 1)[0].rstrip("/")
        assert url.startswith("http://127.0.0.1:"), line
        assert get_when_up(f"{url}/s/ok-1").status_code == 200
        for bad in ("x" * 10_000, "a\x00b", "..%2F..%2Foutside", "a\\b", "é" * 150):
            quoted = urllib.parse.quote(bad, safe="%")
            for route in (
                f"/s/{quoted}",
                f"/s/{quoted}/events",
                f"/s/{quoted}/live",
                f"/api/sessions/{quoted}",
            ):
                answer = httpx.get(url + route, timeout=HTTP_TIMEOUT)
                assert answer.status_code == 404, (route[:60], answer.status_code, answer.text[:200])
                assert "Traceback" not in answer.text
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=patience(30))
    assert "Traceback" not in stderr, stderr[-2000:]
    assert proc.returncode == 0, stderr[-2000:]


def test_sessions_file_names_never_leave_the_store(tmp_path: Path) -> None:
    """JSONL builds file names from ids: even a stored id that looks like a path stays inside."""
    from dsh.store.jsonl import session_file_name

    for sid in ("../x", "a/../../b", "..", "/etc/passwd", "a\x00b", "~2E~2E"):
        name = session_file_name(sid)
        assert os.sep not in name and not name.startswith(".") and "\x00" not in name, (sid, name)

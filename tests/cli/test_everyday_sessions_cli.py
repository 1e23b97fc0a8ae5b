"""Finding, reading and tidying sessions through the CLI: prefixes, list, log, export, rm, prune."""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dsh.snapshot.runner import SCENARIOS

from .conftest import Dsh, assert_user_error
from .test_chat_cli import Terminal

MIXED = SCENARIOS / "subagent-mixed"
GOLDEN = Path(__file__).parent / "golden"


def _headers() -> list[dict[str, Any]]:
    return [json.loads(p.read_text().splitlines()[0]) for p in sorted(MIXED.glob("session*.jsonl"))]


# The bundled recording's ids and times (``make scenarios`` re-records them)
ROOT = next(h["id"] for h in _headers() if "parentSession" not in h)
SPAWN = next(h["id"] for h in _headers() if h.get("parentSession") and not h["isSeeded"])
FORK = next(h["id"] for h in _headers() if h.get("isSeeded"))
RECORDED_UNTIL = max(
    json.loads(line)["time"] for p in MIXED.glob("session*.jsonl") for line in p.read_text().splitlines()[1:]
)


def _normalized(text: str) -> str:
    """The recording's ids and creation time as placeholders, so a re-recording keeps the goldens."""
    for sid, token in ((ROOT, "{{root}}"), (SPAWN, "{{spawn}}"), (FORK, "{{fork}}")):
        text = text.replace(sid, token)
    return re.sub(r"created \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", "created {{time}}", text)


def _import_mixed(dsh: Dsh) -> None:
    logs = [MIXED / "session.jsonl", MIXED / "session.1.jsonl", MIXED / "session.2.jsonl"]
    dsh("sessions", "import", *logs).ok()


def test_the_transcript_matches_the_golden_files(dsh_sqlite: Dsh) -> None:
    _import_mixed(dsh_sqlite)
    linked, nested, fork, shown, markdown = dsh_sqlite.many(
        ("log", ROOT[:4]),
        ("log", ROOT, "--children"),
        ("log", FORK[:6]),
        ("sessions", "show", ROOT[:8], "--transcript", "--children"),
        ("sessions", "export", ROOT[:8], "--format", "markdown", "--children"),
    )
    assert _normalized(linked.ok().stdout) == (GOLDEN / "subagent-mixed.md").read_text()
    assert _normalized(nested.ok().stdout) == (GOLDEN / "subagent-mixed.children.md").read_text()
    assert _normalized(fork.ok().stdout) == (GOLDEN / "subagent-mixed.fork-child.md").read_text()
    assert shown.ok().stdout == nested.stdout == markdown.ok().stdout, "one renderer behind all three"


def test_prefixes_list_and_export_formats(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    _import_mixed(dsh_sqlite)
    dsh_sqlite("sessions", "fork", ROOT, "--id", ROOT[:9] + "other").ok()  # shares a 9-char prefix
    listing, table, ambiguous, missing, as_json, tree, limited = dsh_sqlite.many(
        ("sessions", "list", "--json"),
        ("sessions", "list"),
        ("sessions", "show", ROOT[:4]),
        ("log", "zzz"),
        ("sessions", "export", FORK[:5], "--format", "json"),
        ("sessions", "tree", ROOT[:10]),
        ("sessions", "list", "--json", "--limit", "1", "--since", "2026-01-01"),
    )
    rows = {row["id"]: row for row in listing.json()}
    assert rows[ROOT]["title"].startswith("Remember this fact for later") and rows[ROOT]["children"] == 3
    assert rows[ROOT]["status"] == "completed" and rows[ROOT]["model"] == "deepseek-chat"
    assert (
        rows[FORK]["firstPrompt"].startswith("What is the project codeword") and rows[FORK]["children"] == 0
    )
    assert isinstance(rows[ROOT]["lastActivity"], int)
    ids = [line.split()[0] for line in table.ok().stdout.splitlines()[1:]]
    assert ROOT[:10] in ids and SPAWN[:8] in ids, "ids as their shortest unique prefix (8 or more)"
    line = assert_user_error(ambiguous, "ambiguous", ROOT, ROOT[:9] + "other")
    assert ambiguous.code == 2 and line.count(",") == 1
    assert_user_error(missing, "zzz", "not found")
    document = as_json.json()
    assert document["session"]["id"] == FORK and document["session"]["inheritedEventCount"] == 8
    assert document["events"][8]["type"] == "session/end-seed" and document["children"] == []
    assert "spawn " + SPAWN in tree.ok().stdout and "fork " + FORK in tree.stdout
    assert [row["id"] for row in limited.json()] == [ROOT[:9] + "other"], "the most recently created one"
    after = datetime.fromtimestamp(RECORDED_UNTIL / 1000 + 1, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    recent = dsh_sqlite("sessions", "list", "--json", "--since", after).json()
    assert [row["id"] for row in recent] == [ROOT[:9] + "other"], "only the fork made just now"
    bad = dsh_sqlite("sessions", "list", "--since", "soon")
    assert_user_error(bad, "--since", "soon")


def _holds_lease(db: Path, sid: str) -> tuple[int, int]:
    """A lease of ``sid`` held by this (test) process: the SQLite store's flock file; (pid, fd)."""
    lock = db.parent / f"{db.name}-leases" / f"{sid}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, json.dumps({"pid": os.getpid(), "host": "here", "since": 1}).encode())
    return os.getpid(), fd


def test_rm_deletes_descendants_under_the_lease_and_prune_ages_trees(dsh: Dsh, tmp_path: Path) -> None:
    _import_mixed(dsh)
    dsh("sessions", "fork", FORK, "--id", "grandchild").ok()
    refused = dsh("sessions", "rm", ROOT[:8])  # stdin is no terminal: --yes is required
    assert_user_error(refused, "--yes", "3 descendant(s)")
    assert len(dsh("sessions", "list", "--json").json()) == 4
    if dsh.store.startswith("sqlite:"):
        db = Path(dsh.store.removeprefix("sqlite:"))
        _, fd = _holds_lease(db, "grandchild")
        try:
            busy = dsh("sessions", "rm", ROOT, "--yes", "--with-children")
            assert_user_error(busy, "session grandchild is busy")
            assert len(dsh("sessions", "list", "--json").json()) == 4, "a refused delete deletes nothing"
        finally:
            os.close(fd)
    if dsh.store.startswith("sqlite:"):  # grandchild holds FORK's events by reference
        assert_user_error(dsh("sessions", "rm", FORK[:8], "--yes"), "grandchild", "--with-children")
    gone = dsh("sessions", "rm", FORK[:8], "--yes", "--with-children", "--json").json()
    assert sorted(gone["deleted"]) == sorted([FORK, "grandchild"])
    left = [row["id"] for row in dsh("sessions", "list", "--json").json()]
    assert left == [ROOT, SPAWN]
    age = f"{int(time.time() - RECORDED_UNTIL / 1000) - 2}s"  # the recording is older, nothing else is
    dry = dsh("sessions", "prune", "--older-than", age, "--dry-run", "--json").json()
    assert dry == {"deleted": [ROOT, SPAWN], "skipped": [], "dryRun": True}
    assert dsh("sessions", "prune", "--older-than", "3650d", "--json").json()["deleted"] == []
    pruned = dsh("sessions", "prune", "--older-than", age).ok()
    assert pruned.stdout.split() == [ROOT, SPAWN] and "deleted 2 session(s)" in pruned.stderr
    assert dsh("sessions", "list", "--json").json() == []
    assert_user_error(dsh("sessions", "prune", "--older-than", "a while"), "--older-than")


def test_the_transcript_of_an_original_recording_with_relayed_messages(
    dsh_sqlite: Dsh, upstream: Path
) -> None:
    recording = upstream / "subagent-report"
    dsh_sqlite("sessions", "import", recording / "session.jsonl", recording / "session.1.jsonl").ok()
    out = dsh_sqlite("log", "1111", "--children").ok().stdout
    assert out == (GOLDEN / "upstream-subagent-report.children.md").read_text()
    assert "- ✉ subagent-report: Background subagent 3333" in out


def test_rm_on_a_terminal_asks_first_no_keeps_everything_yes_deletes(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    _import_mixed(dsh_sqlite)
    for answer, code, left in (("n", 1, 3), ("y", 0, 0)):
        term = Terminal(["sessions", "rm", ROOT[:8]], dsh_sqlite.env, tmp_path)
        asked = term.expect("[y/N]:")
        assert "delete" in asked and "2 descendant(s)" in asked, asked
        term.send(f"{answer}\r")
        assert term.wait() == code
        assert len(dsh_sqlite("sessions", "list", "--json").json()) == left

"""Finding, reading and tidying sessions through the CLI: prefixes, list, log, export, rm, prune."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from dsh.snapshot.runner import SCENARIOS

from .conftest import Dsh, assert_user_error

MIXED = SCENARIOS / "subagent-mixed"
ROOT = "7f7940fc-4500-44c4-8bb9-6aaf9cc7a6d0"
SPAWN = "8f25fe21-8a5b-479b-a476-eb8187abd68b"
FORK = "18e5655d-6527-493f-8091-767de8a1bba2"
GOLDEN = Path(__file__).parent / "golden"


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
    assert linked.ok().stdout == (GOLDEN / "subagent-mixed.md").read_text()
    assert nested.ok().stdout == (GOLDEN / "subagent-mixed.children.md").read_text()
    assert fork.ok().stdout == (GOLDEN / "subagent-mixed.fork-child.md").read_text()
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
    assert document["session"]["id"] == FORK and document["session"]["inheritedEventCount"] == 7
    assert document["events"][7]["type"] == "session/end-seed" and document["children"] == []
    assert "spawn " + SPAWN in tree.ok().stdout and "fork " + FORK in tree.stdout
    assert [row["id"] for row in limited.json()] == [ROOT[:9] + "other"], "the most recently created one"
    recent = dsh_sqlite("sessions", "list", "--json", "--since", "10m").json()
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
            busy = dsh("sessions", "rm", ROOT, "--yes")
            assert_user_error(busy, "session grandchild is busy")
            assert len(dsh("sessions", "list", "--json").json()) == 4, "a refused delete deletes nothing"
        finally:
            os.close(fd)
    gone = dsh("sessions", "rm", FORK[:8], "--yes", "--json").json()
    assert sorted(gone["deleted"]) == sorted([FORK, "grandchild"])
    left = [row["id"] for row in dsh("sessions", "list", "--json").json()]
    assert left == [ROOT, SPAWN]
    dry = dsh("sessions", "prune", "--older-than", "1h", "--dry-run", "--json").json()
    assert dry == {"deleted": [ROOT, SPAWN], "skipped": [], "dryRun": True}
    assert dsh("sessions", "prune", "--older-than", "3650d", "--json").json()["deleted"] == []
    pruned = dsh("sessions", "prune", "--older-than", "1h").ok()
    assert pruned.stdout.split() == [ROOT, SPAWN] and "deleted 2 session(s)" in pruned.stderr
    assert dsh("sessions", "list", "--json").json() == []
    assert_user_error(dsh("sessions", "prune", "--older-than", "a while"), "--older-than")

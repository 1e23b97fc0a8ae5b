"""Issue #41 item 1 through the CLI: ``dsh sessions fork ID --at TURN`` / ``--at-seq N`` on
SQLite, JSONL and PostgreSQL; the branch is continued by ``dsh run --resume``; errors are one line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.events import SessionHeader
from dsh.store.postgres_testing import (
    drop_schema,
    new_schema_name,
    server_url,
    unreachable_reason,
    with_schema,
)
from dsh.store.samples import completed_turns
from dsh.store.url import open_store
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply

KEY = "sk-fork-cli-0123456789"


@pytest.fixture(params=["sqlite", "jsonl", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 's.db'}"
    elif request.param == "jsonl":
        yield f"jsonl:{tmp_path / 'sessions'}"
    else:
        server = server_url()
        reason = unreachable_reason(server)
        if reason is not None:
            pytest.skip(reason)
        schema = new_schema_name()
        yield with_schema(server, schema)
        drop_schema(server, schema)


def dsh(tmp_path: Path, store: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_STORE": store, "NO_COLOR": "1", "PYTHONUTF8": "1", "DEEPSEEK_API_KEY": KEY})
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
        input=stdin,
    )


def _answer(request: RecordedRequest) -> Response:
    return stream_reply(text=f"answer to {request.prompt}")


def _ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def _one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    for needle in needles:
        assert needle in done.stderr, done.stderr


def _events(tmp_path: Path, store: str, sid: str) -> list[dict[str, Any]]:
    out = _ok(dsh(tmp_path, store, "sessions", "show", sid, "--events", "--json")).stdout
    events: list[dict[str, Any]] = json.loads(out)["events"]
    return events


def test_fork_at_turn_3_of_six_is_continued_by_run_resume(tmp_path: Path, store: str) -> None:
    with OpenAICompatServer(handler=_answer) as server:
        url = ("--base-url", server.base_url, "--model", "m")
        first = _ok(dsh(tmp_path, store, "run", "question 1", "--json", *url))
        parent = json.loads(first.stdout.splitlines()[-1])["sessionId"]
        turns = "".join(f"question {n}\n" for n in range(2, 7))  # one process for five turns
        _ok(dsh(tmp_path, store, "chat", "--resume", parent, *url, stdin=turns))
        forked = _ok(dsh(tmp_path, store, "sessions", "fork", parent, "--at", "3", "--id", "branch-3"))
        assert "at turn 3" in forked.stdout, forked.stdout
        parent_events = _events(tmp_path, store, parent)
        child_events = _events(tmp_path, store, "branch-3")
        cut = 1 + max(
            i for i, e in enumerate(parent_events) if e["type"] == "turn/end" and e["data"]["turn"] == 3
        )
        assert child_events[:cut] == parent_events[:cut]
        assert child_events[cut]["type"] == "session/end-seed" and len(child_events) == cut + 1
        # --at-seq: the first turn/end at or after the seq (inside turn 2: turn 2's end)
        inside = next(
            i for i, e in enumerate(parent_events) if e["type"] == "turn/start" and e["data"]["turn"] == 2
        )
        by_seq = json.loads(
            _ok(
                dsh(tmp_path, store, "sessions", "fork", parent, "--at-seq", str(inside + 1), "--json")
            ).stdout
        )
        turn2_end = next(
            i for i, e in enumerate(parent_events) if e["type"] == "turn/end" and e["data"]["turn"] == 2
        )
        assert by_seq["inheritedEventCount"] == turn2_end + 1 and by_seq["parentSession"] == parent
        # the branch is a top-level session: run --resume continues it, asking what the parent asked at turn 4
        _ok(dsh(tmp_path, store, "run", "question 4", "--resume", "branch-3", *url))
        assert server.requests[-1].body == server.requests[3].body
        own = _events(tmp_path, store, "branch-3")
        assert own[:cut] == parent_events[:cut]
        assert [e["type"] for e in own[cut + 1 :]][-2:] == ["turn/end", "workspace/checkpoint"]
    tree = json.loads(_ok(dsh(tmp_path, store, "sessions", "tree", parent, "--json")).stdout)
    (branch,) = [c for c in tree["children"] if c["id"] == "branch-3"]
    assert branch["kind"] == "fork" and branch["branchTurn"] == 3
    assert "branch-3" in _ok(dsh(tmp_path, store, "sessions", "tree", parent)).stdout
    assert f"fork of `{parent}` at turn 3" in _ok(dsh(tmp_path, store, "log", "branch-3")).stdout
    listed = _ok(dsh(tmp_path, store, "sessions", "list")).stdout.splitlines()
    (row,) = [line for line in listed if line.startswith("branch-3")]
    assert f"fork of {parent[:8]} at turn 3: question 4" in row, row


def test_fork_errors_are_one_line(tmp_path: Path, store: str) -> None:
    with OpenAICompatServer(handler=_answer) as server:
        url = ("--base-url", server.base_url, "--model", "m")
        first = _ok(dsh(tmp_path, store, "run", "question 1", "--json", *url))
    parent = json.loads(first.stdout.splitlines()[-1])["sessionId"]
    _one_line_error(
        dsh(tmp_path, store, "sessions", "fork", parent, "--at", "2"), parent, "turn 2", "past the end"
    )
    _one_line_error(dsh(tmp_path, store, "sessions", "fork", parent, "--at", "0"), "turn 0")
    _one_line_error(
        dsh(tmp_path, store, "sessions", "fork", parent, "--at-seq", "9999"), "seq 9999", "past the end"
    )
    _one_line_error(dsh(tmp_path, store, "sessions", "fork", "nobody-0", "--at", "1"), "nobody-0")
    _one_line_error(
        dsh(tmp_path, store, "sessions", "fork", parent, "--at", "1", "--at-seq", "1"), "not both"
    )


async def _two_turns(url: str) -> None:
    s = open_store(url)
    try:
        await s.create(SessionHeader(id="p-1", created_at=1, cwd="/w"))
        await s.append("p-1", completed_turns(2))
    finally:
        await s.close()


def test_rm_of_a_parent_its_forks_reference_is_refused_unless_with_children(
    tmp_path: Path, store: str
) -> None:
    asyncio.run(_two_turns(store))
    _ok(dsh(tmp_path, store, "sessions", "fork", "p-1", "--at", "1", "--id", "b-1"))
    refused = dsh(tmp_path, store, "sessions", "rm", "p-1", "--yes")
    if store.startswith("jsonl:"):  # JSONL copies the prefix: nothing references the parent
        assert refused.returncode == 0, refused.stderr
        return
    _one_line_error(refused, "p-1", "b-1", "--with-children")
    listed = json.loads(_ok(dsh(tmp_path, store, "sessions", "list", "--json")).stdout)
    assert {s["id"] for s in listed} == {"p-1", "b-1"}, "nothing deleted"
    gone = json.loads(
        _ok(dsh(tmp_path, store, "sessions", "rm", "p-1", "--yes", "--with-children", "--json")).stdout
    )
    assert gone == {"deleted": ["p-1", "b-1"]}

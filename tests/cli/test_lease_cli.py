"""One live writer per session: ``dsh run --resume`` processes racing, and a SIGKILLed holder.

Each test runs real ``dsh`` processes against the local OpenAI-compatible test server, once
per store (SQLite, JSONL, PostgreSQL in a scratch schema).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Faults, Response, stream_reply
from tests.patience import patience

KEY = "sk-lease-test-0123456789"
BUSY = re.compile(r"dsh: error: session (\S+) is busy \(held by pid (\d+) on (\S+) since (\S+)\)")
STRIPPED = ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL", "DSH_MODEL")


@pytest.fixture(params=["sqlite", "jsonl", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store URL of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'store' / 'sessions.db'}"
        return
    if request.param == "jsonl":
        yield f"jsonl:{tmp_path / 'store' / 'sessions'}"
        return
    pytest.importorskip("psycopg")
    from dsh.store.postgres_testing import (
        drop_schema,
        new_schema_name,
        server_url,
        unreachable_reason,
        with_schema,
    )

    url = server_url()
    reason = unreachable_reason(url)
    if reason is not None:
        pytest.skip(reason)
    schema = new_schema_name()
    yield with_schema(url, schema)
    drop_schema(url, schema)


class Cli:
    """``python -m dsh.cli`` processes bound to one store and one model server."""

    def __init__(self, store: str, home: Path, base_url: str) -> None:
        self.base_url = base_url
        self.env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
        self.env.update(
            {
                "DSH_STORE": store,
                "XDG_DATA_HOME": str(home / "data"),
                "NO_COLOR": "1",
                "PYTHONUTF8": "1",
                "DSH_API_KEY": KEY,
            }
        )
        self.cwd = home

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "dsh.cli", *args]

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args),
            env=self.env,
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), env=self.env, cwd=self.cwd, capture_output=True, text=True, timeout=60
        )

    def resume(self, sid: str, prompt: str, *extra: str) -> list[str]:
        return ["run", prompt, "--json", "--resume", sid, "--base-url", self.base_url, *extra]

    def events(self, sid: str) -> list[dict[str, Any]]:
        shown = self.run("sessions", "show", sid, "--events", "--json")
        assert shown.returncode == 0, shown.stderr
        events: list[dict[str, Any]] = json.loads(shown.stdout)["events"]
        return events


def _last_user(req: RecordedRequest) -> str:
    return req.prompt


def _handler(req: RecordedRequest) -> Response:
    prompt = _last_user(req)
    if prompt.startswith("hang"):
        return stream_reply(text=["never", " sent"], faults=Faults(stall_after=1, stall_seconds=None))
    if prompt.startswith("slow"):  # hold the lease long enough for the other racer to try
        return stream_reply(text=["ANSWER-", prompt], faults=Faults(stall_after=1, stall_seconds=2.0))
    return stream_reply(text=f"ANSWER-{prompt}")


def _seed(cli: Cli) -> str:
    first = cli.run("run", "one", "--json", "--base-url", cli.base_url)
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout.splitlines()[-1])["sessionId"]
    assert isinstance(sid, str)
    return sid


def _turn_ends(events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(e["data"]["turn"], e["data"]["reason"]["kind"]) for e in events if e["type"] == "turn/end"]


def _answers(events: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for e in events:
        if e["type"] == "assistant/message":
            out.extend(b["text"] for b in e["data"]["message"]["content"] if b.get("type") == "text")
    return out


def _wait_for(server: OpenAICompatServer, prompt: str, timeout: float = 60.0) -> RecordedRequest:
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        for req in server.requests:
            if _last_user(req) == prompt:
                return req
        time.sleep(0.005)
    raise AssertionError(f"the server never got a request for {prompt!r}")


def test_two_resumes_race_exactly_one_runs_the_other_is_busy(store: str, tmp_path: Path) -> None:
    with OpenAICompatServer(handler=_handler) as server:
        cli = Cli(store, tmp_path, server.base_url)
        sid = _seed(cli)
        racers = [cli.start(*cli.resume(sid, f"slow-{n}")) for n in range(2)]
        outs = [p.communicate(timeout=60) for p in racers]
    codes = [p.returncode for p in racers]
    assert sorted(c == 0 for c in codes) == [False, True], (codes, outs)
    win = codes.index(0)
    winner, loser = racers[win], racers[1 - win]
    loser_err = outs[1 - win][1]
    lines = loser_err.splitlines()
    assert len(lines) == 1, loser_err
    match = BUSY.fullmatch(lines[0])
    assert match is not None, lines[0]
    assert match[1] == sid and int(match[2]) == winner.pid, lines[0]
    assert loser.returncode != 0
    result = json.loads(outs[win][0].splitlines()[-1])
    assert result["text"] == f"ANSWER-slow-{win}"

    events = cli.events(sid)
    assert _turn_ends(events) == [(1, "completed"), (2, "completed")]
    assert _answers(events) == ["ANSWER-one", f"ANSWER-slow-{win}"]
    assert [e["seq"] for e in events] == list(range(len(events)))


def test_a_sigkilled_holder_frees_the_session_for_the_next_resume(store: str, tmp_path: Path) -> None:
    with OpenAICompatServer(handler=_handler) as server:
        cli = Cli(store, tmp_path, server.base_url)
        sid = _seed(cli)

        # a waiting writer takes over once the holder dies (the kernel frees its lock)
        holder = cli.start(*cli.resume(sid, "hang-1"))
        _wait_for(server, "hang-1")
        waiter = cli.start(*cli.resume(sid, "after-1", "--wait", "30"))
        assert waiter.stderr is not None
        waiting = waiter.stderr.readline()  # the waiter is in its polling loop now
        assert waiting.startswith(f"dsh: warning: session {sid} is busy (held by pid {holder.pid} on ")
        assert waiting.rstrip().endswith("; waiting up to 30 s for it"), waiting
        assert not any(_last_user(r) == "after-1" for r in server.requests), "the waiter did not wait"
        killed = time.monotonic()
        os.kill(holder.pid, signal.SIGKILL)
        holder.communicate(timeout=patience(30))
        took_over = _wait_for(server, "after-1").started_at - killed
        _out, err = waiter.communicate(timeout=60)
        assert waiter.returncode == 0, err

        # a fresh resume right after a SIGKILL proceeds (no --wait needed)
        holder = cli.start(*cli.resume(sid, "hang-2"))
        _wait_for(server, "hang-2")
        os.kill(holder.pid, signal.SIGKILL)
        holder.communicate(timeout=patience(30))
        killed = time.monotonic()
        fresh = cli.run(*cli.resume(sid, "after-2"))
        assert fresh.returncode == 0 and "busy" not in fresh.stderr, fresh.stderr
        # how fast (figures, printed with -s) is for bench/, not for an assertion here
        started = _wait_for(server, "after-2").started_at - killed
    print(f"\n[{store.split(':')[0]}] waiting writer after SIGKILL: {took_over * 1000:.0f} ms; "
          f"fresh resume process reached the model after {started:.2f} s")  # fmt: skip

    events = cli.events(sid)
    assert _turn_ends(events) == [
        (1, "completed"),
        (2, "interrupted"),
        (3, "completed"),
        (4, "interrupted"),
        (5, "completed"),
    ]
    assert _answers(events)[-1] == "ANSWER-after-2"


def test_wait_needs_resume(tmp_path: Path) -> None:
    cli = Cli(f"sqlite:{tmp_path / 's.db'}", tmp_path, "http://127.0.0.1:9")
    out = cli.run("run", "hi", "--wait", "3")
    assert out.returncode == 2
    assert out.stderr.splitlines() == ["dsh: error: --wait SECONDS needs --resume ID or --continue"]

"""Compaction through the CLI: a long session made by ``dsh run --context-window`` against the
local test server compacts, saves as a scenario that replays strictly with the server gone, and
``dsh compact ID`` compacts between turns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply, wire_usage
from tests.scenario_recipes import MODEL, _words

KEY = "sk-test-compaction-0123456789"


def _dsh(*args: str, cwd: Path, store: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "DSH_STORE": store, "NO_COLOR": "1", **env},
        cwd=cwd,
    )


def _summarizing(req: RecordedRequest) -> bool:
    return "writing a checkpoint of the conversation above" in req.prompt


def _handler(req: RecordedRequest) -> Response:
    size = len(json.dumps(req.json))
    usage = wire_usage(size // 4, 40)
    if _summarizing(req):
        return stream_reply(
            text=_words("## Current Work\n- the story so far, condensed"), usage=usage, model=MODEL
        )
    return stream_reply(text=_words("Once upon a time " * 12), usage=usage, model=MODEL)


def test_a_long_run_with_a_small_window_compacts_replays_and_shows_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    store = f"sqlite:{tmp_path / 'sessions.db'}"
    with OpenAICompatServer(handler=_handler) as server:
        common = ("--json", "--base-url", server.base_url, "--model", MODEL, "--context-window", "8000")
        first = _dsh("run", "Tell me a story. " * 40, *common, cwd=work, store=store, DSH_API_KEY=KEY)
        assert first.returncode == 0, first.stderr
        sid = json.loads(first.stdout.splitlines()[-1])["sessionId"]
        # the tools' schemas and the system prompt come to ~4,900 tokens and each turn adds ~230:
        # the 8th resume crosses the window's threshold, the 9th and 10th compact a compacted history
        for i in range(10):
            more = _dsh(
                "run", f"Go on ({i}). " * 60, "--resume", sid, *common, cwd=work, store=store, DSH_API_KEY=KEY
            )
            assert more.returncode == 0, more.stderr
        summaries = [r for r in server.requests if _summarizing(r)]
        assert summaries, "no compaction happened"
        biggest = max(len(json.dumps(r.json)) for r in server.requests)
    assert biggest // 4 < 8000
    shown = _dsh("sessions", "show", sid, "--events", cwd=tmp_path, store=store)
    assert shown.returncode == 0, shown.stderr
    assert "compaction/summary" in shown.stdout and "request/context" in shown.stdout
    log = _dsh("log", sid, cwd=tmp_path, store=store)
    assert log.returncode == 0, log.stderr
    assert "── compacted turns 1–" in log.stdout and "the story so far, condensed" in log.stdout
    scenario = tmp_path / "saved"
    saved = _dsh("scenario", "save", sid, str(scenario), cwd=tmp_path, store=store)
    assert saved.returncode == 0, saved.stderr
    replayed = _dsh("scenario", "replay", str(scenario), cwd=tmp_path, store=f"sqlite:{tmp_path / 'r.db'}")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr


def test_dsh_compact_compacts_between_turns_and_says_why_when_it_cannot(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    store = f"sqlite:{tmp_path / 'sessions.db'}"
    with OpenAICompatServer(handler=_handler) as server:
        common = ("--base-url", server.base_url, "--model", MODEL)
        first = _dsh(
            "run", "Tell me a story. " * 40, "--json", *common, cwd=work, store=store, DSH_API_KEY=KEY
        )
        sid = json.loads(first.stdout.splitlines()[-1])["sessionId"]
        done = _dsh("compact", sid[:8], *common, cwd=work, store=store, DSH_API_KEY=KEY)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"session {sid}: compacted 2 messages, ")
        again = _dsh("compact", sid, *common, cwd=work, store=store, DSH_API_KEY=KEY)
        assert again.returncode == 1
        line = again.stderr.strip()
        assert line.startswith(f"dsh compact: session {sid}: the summary (") and "\n" not in line
        assert line.endswith("is not smaller than what it replaces (122); the history is unchanged"), line
        assert sum(_summarizing(r) for r in server.requests) == 2
        unknown = _dsh("compact", "nope", *common, cwd=work, store=store, DSH_API_KEY=KEY)
        assert unknown.returncode != 0 and len(unknown.stderr.strip().splitlines()) == 1
    shown = _dsh("sessions", "show", sid, "--events", cwd=tmp_path, store=store)
    assert shown.stdout.count("compaction/end") == 2 and '"error":"the summary (' in shown.stdout

"""#36 item 9 through the CLI and the viewer: a JSONL session file cut at a line boundary.

A real ``dsh run`` (against the local OpenAI-compatible test server) writes the session; the
file is then cut back to fewer whole lines. Every command that reads it says so in one line
naming the file and the missing seqs; ``dsh run --resume`` refuses in one line and appends
nothing; ``dsh ui`` (a real server on 127.0.0.1) shows it on the session's pages.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.patience import HTTP_TIMEOUT, get_when_up, patience

KEY = "sk-cut-session-0123456789"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_MODEL")}
    env.update({"DSH_STORE": f"jsonl:{tmp_path / 'sessions'}", "NO_COLOR": "1", "PYTHONUTF8": "1"})
    return env


def dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def _two_turns(tmp_path: Path, server: OpenAICompatServer) -> tuple[str, Path]:
    first = dsh(tmp_path, "run", "one", "--json", "--base-url", server.base_url, "--api-key", KEY)
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout.splitlines()[-1])["sessionId"]
    second = dsh(tmp_path, "run", "two", "--resume", sid, "--base-url", server.base_url, "--api-key", KEY)
    assert second.returncode == 0, second.stderr
    return sid, tmp_path / "sessions" / f"{sid}.jsonl"


def _cut(path: Path) -> tuple[int, int]:
    """Cut the file back to the end of its first turn (a line boundary); (events kept, events before)."""
    lines = path.read_bytes().splitlines(keepends=True)
    events = [json.loads(line) for line in lines[1:]]
    first_end = next(i for i, e in enumerate(events) if e["type"] == "turn/end")
    path.write_bytes(b"".join(lines[: first_end + 2]))
    return first_end + 1, len(events)


def test_every_command_names_the_cut_and_resume_refuses(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=lambda r: stream_reply(text="fine")) as server:
        sid, path = _two_turns(tmp_path, server)
        kept, total = _cut(path)
        cut = path.read_bytes()
        expected = f"{path}: seqs {kept}..{total - 1} are missing"
        for command in (
            ("log", sid),
            ("sessions", "list"),
            ("sessions", "show", sid),
            ("sessions", "tree"),
            ("sessions", "tree", sid),
            ("sessions", "export", sid),
            ("sessions", "export", sid, "--format", "json"),
            ("sessions", "tail", sid),
        ):
            out = dsh(tmp_path, *command)
            assert out.returncode == 0, (command, out.stderr)
            lines = out.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"dsh: warning: {expected}"), (command, out.stderr)
        asked = len(server.requests)
        resumed = dsh(
            tmp_path, "run", "three", "--resume", sid, "--base-url", server.base_url, "--api-key", KEY
        )
        assert len(server.requests) == asked, "no model request after a detected loss"
    assert resumed.returncode == 1
    (only,) = resumed.stderr.splitlines()  # one line: the refusal, not a warning and then it
    assert only.startswith(f"dsh: error: refusing to resume session {sid}: {expected}"), only
    assert "Traceback" not in resumed.stderr
    assert path.read_bytes() == cut, "nothing was appended"


def test_the_viewer_shows_the_cut(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=lambda r: stream_reply(text="fine")) as server:
        sid, path = _two_turns(tmp_path, server)
    kept, total = _cut(path)
    expected = f"seqs {kept}..{total - 1} are missing"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsh.cli", "ui", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_env(tmp_path), "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(" at ", 1)[1].split(" ", 1)[0].rstrip("/")
        assert url.startswith("http://127.0.0.1:"), line
        page = get_when_up(f"{url}/s/{sid}")
        assert page.status_code == 200 and expected in page.text and str(path) in page.text
        assert expected in httpx.get(f"{url}/s/{sid}/events", timeout=HTTP_TIMEOUT).text
        assert any(
            expected in w
            for w in httpx.get(f"{url}/api/sessions/{sid}", timeout=HTTP_TIMEOUT).json()["warnings"]
        )
        assert httpx.get(f"{url}/", timeout=HTTP_TIMEOUT).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=patience(30))
    assert "Traceback" not in stderr and proc.returncode == 0, stderr[-2000:]

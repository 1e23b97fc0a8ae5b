"""Issue #41 item 3 through the CLI: ``dsh run`` checkpoints the workspace after each turn;
``dsh rewind ID --to TURN`` restores what ``bash`` wrote, asks first, and ``--undo`` undoes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

KEY = "sk-rewind-cli-0123456789"


def dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update(
        {
            "DSH_STORE": f"sqlite:{tmp_path / 's.db'}",
            "NO_COLOR": "1",
            "PYTHONUTF8": "1",
            "DEEPSEEK_API_KEY": KEY,
        }
    )
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _writer(request: RecordedRequest) -> Response:
    if request.messages and request.messages[-1].get("role") == "tool":
        return stream_reply(text="written")
    n = request.prompt.split()[-1]
    command = f"echo v{n} > notes.txt" + (" && echo extra > extra.txt" if n == "3" else "")
    args = json.dumps({"command": command, "description": "write"})
    return stream_reply(tool_calls=[WireToolCall.split(f"call_{n}", "bash", args, 2)])


def _ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def test_rewind_restores_what_bash_wrote_after_turn_2_and_undo_brings_it_back(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with OpenAICompatServer(handler=_writer) as server:
        url = ("--base-url", server.base_url, "--model", "m", "--cwd", str(work), "--approve")
        first = _ok(dsh(tmp_path, "run", "write 1", "--json", *url))
        sid = json.loads(first.stdout.splitlines()[-1])["sessionId"]
        for n in (2, 3):
            _ok(dsh(tmp_path, "run", f"write {n}", "--resume", sid, *url[:4], "--approve"))
    assert (work / "notes.txt").read_text() == "v3\n" and (work / "extra.txt").exists()
    # no terminal and no --yes: refused in one line, nothing changed
    refused = dsh(tmp_path, "rewind", sid, "--to", "2")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "--yes" in refused.stderr and (work / "notes.txt").read_text() == "v3\n"
    done = json.loads(_ok(dsh(tmp_path, "rewind", sid, "--to", "2", "--yes", "--json")).stdout)
    assert (work / "notes.txt").read_text() == "v2\n" and not (work / "extra.txt").exists()
    assert done["written"] == ["notes.txt"] and done["deleted"] == ["extra.txt"]
    branch = done["session"]
    tree = json.loads(_ok(dsh(tmp_path, "sessions", "tree", sid, "--json")).stdout)
    assert [(c["id"], c["branchTurn"]) for c in tree["children"]] == [(branch, 2)]
    undone = _ok(dsh(tmp_path, "rewind", branch, "--undo", "--yes"))
    assert "undid" in undone.stdout
    assert (work / "notes.txt").read_text() == "v3\n" and (work / "extra.txt").read_text() == "extra\n"
    missing = dsh(tmp_path, "rewind", sid, "--to", "7", "--yes")
    assert missing.returncode == 2 and "no workspace checkpoint at turn 7" in missing.stderr

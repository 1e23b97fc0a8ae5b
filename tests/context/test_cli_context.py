"""``dsh run`` tells the model the workspace's AGENTS.md and skills, titles the session (shown by
``dsh sessions list``), and a malformed SKILL.md is one warning line on stderr."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply
from tests.cli.test_run_cli import KEY, dsh


def _reply(req: RecordedRequest) -> Response:
    return stream_reply(text=["ok"])


def test_run_shows_instructions_and_skills_and_titles_the_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "AGENTS.md").write_text("Always answer in haiku.\n")
    (work / "CLAUDE.md").write_text("Claude rule.\n")
    good = work / ".agents" / "skills" / "deploy" / "SKILL.md"
    good.parent.mkdir(parents=True)
    good.write_text("---\nname: deploy\ndescription: Ship it.\n---\nSteps.\n")
    bad = work / ".dsh" / "skills" / "broken" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: Broken Name\ndescription: x\n---\n")
    with OpenAICompatServer(handler=_reply) as server:
        out = dsh(
            tmp_path, "run", "Summarize the project rules for me please", "--cwd", str(work),
            "--base-url", server.base_url, "--api-key", KEY, "--model", "m1", HOME=str(home),
        )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    warnings = [line for line in out.stderr.splitlines() if "skipping skill" in line]
    assert len(warnings) == 1 and str(bad) in warnings[0]
    users = [m for m in server.requests[0].json["messages"] if m["role"] == "user"]
    contents = [
        "".join(p["text"] for p in m["content"]) if isinstance(m["content"], list) else m["content"]
        for m in users
    ]
    assert any("Instructions from: AGENTS.md\n\nAlways answer in haiku." in c for c in contents)
    assert any("Instructions from: CLAUDE.md\n\nClaude rule." in c for c in contents)
    assert any("- `deploy`: Ship it." in c for c in contents)
    tools = {t["function"]["name"] for t in server.requests[0].json["tools"]}
    assert {"skill", "session_event_read"} <= tools
    with contextlib.closing(sqlite3.connect(tmp_path / "s.db")) as db:
        [(data,)] = db.execute("SELECT data FROM events WHERE type = 'session/title'").fetchall()
    assert json.loads(data)["title"] == "Summarize the project rules for"
    assert json.loads(data)["source"] == {"kind": "fallback"}
    listed = dsh(tmp_path, "sessions", "list", HOME=str(home))
    assert listed.returncode == 0, listed.stderr
    assert "Summarize the project rules for" in listed.stdout

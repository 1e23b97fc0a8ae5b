"""Files dsh writes for the user follow the process umask (0644 under umask 022, as any
tool's), not mkstemp's 0600; the files that must stay private (the MCP trust answers under
``$DSH_HOME``) are private on purpose, whatever the umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import openai

from dsh.mcp.trust import decide, read_workspace
from dsh.snapshot.runner import SCENARIOS
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.mcp.conftest import copy_calc
from tests.serve.helpers import control, stop

CLIENT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": CLIENT}


def _env(tmp_path: Path) -> dict[str, str]:
    drop = ("DSH_STORE", "DSH_API_KEY", "DEEPSEEK_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "NO_COLOR": "1", "PYTHONUTF8": "1", "DSH_HOME": str(tmp_path / "home")}


def _dsh(tmp_path: Path, *args: str, umask: int = 0o022) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args], env=_env(tmp_path),
        capture_output=True, text=True, timeout=60, umask=umask, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _modes(*paths: Path) -> dict[str, str]:
    return {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in paths}


def test_sessions_export_output_follows_the_umask(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 's.db'}"
    _dsh(tmp_path, "replay", str(SCENARIOS / "text-turn"), "--store", store)
    sid = json.loads(_dsh(tmp_path, "sessions", "list", "--json", "--store", store))[0]["id"]
    _dsh(tmp_path, "sessions", "export", sid, "-o", str(tmp_path / "out.jsonl"), "--store", store)
    _dsh(
        tmp_path, "sessions", "export", sid, "-o", str(tmp_path / "own.jsonl"), "--store", store, umask=0o077
    )
    assert _modes(tmp_path / "out.jsonl", tmp_path / "own.jsonl") == {
        "out.jsonl": "0o644",
        "own.jsonl": "0o600",
    }


def test_serve_record_writes_the_recording_under_the_umask(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    with OpenAICompatServer(handler=lambda _: stream_reply(text=["o", "k"])) as upstream:
        process = subprocess.Popen(
            [sys.executable, "-m", "dsh.cli", "serve", "record", str(directory), "--upstream",
             upstream.base_url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path), umask=0o022,
        )  # fmt: skip
        assert process.stdout is not None
        base_url = process.stdout.readline().strip().rsplit(" on ", 1)[1]
        token = process.stdout.readline().split("control token ", 1)[1].split()[0]
        try:
            with openai.OpenAI(base_url=base_url, api_key="sk-x", max_retries=0) as client:
                list(client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True))  # fmt: skip
            control(base_url, "shutdown", token, method="POST")
        finally:
            _, err = stop(process)
    assert process.returncode == 0, err
    files = sorted(p for p in directory.iterdir() if p.is_file())
    assert files and set(_modes(*files).values()) == {"0o644"}, _modes(*files)


def test_mcp_record_writes_the_recording_under_the_umask(tmp_path: Path) -> None:
    directory, server = tmp_path / "rec", copy_calc(tmp_path / "servers")
    proxy = subprocess.Popen(
        [sys.executable, "-m", "dsh.cli", "mcp", "record", str(directory), "--", sys.executable, str(server)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_env(tmp_path), umask=0o022,
    )  # fmt: skip
    assert proxy.stdin is not None and proxy.stdout is not None
    proxy.stdin.write(json.dumps(INIT) + "\n")
    proxy.stdin.flush()
    answer = proxy.stdout.readline()  # the client waits for its answer before it leaves
    _, err = proxy.communicate(timeout=60)
    assert json.loads(answer)["id"] == 1, err
    files = sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.endswith(".lock"))
    assert files and set(_modes(*files).values()) == {"0o644"}, _modes(*files)


def test_the_mcp_trust_answers_stay_private_under_a_permissive_umask(tmp_path: Path) -> None:
    """The file kept 0600 on purpose: which workspaces' commands the user lets dsh run."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": {"command": "calc"}}}))
    proposal = read_workspace(tmp_path / "ws")
    assert proposal is not None
    previous = os.umask(0o022)
    try:
        assert decide(proposal, trusted=False, ask=lambda _: True, home=tmp_path / "home", notice=print)
    finally:
        os.umask(previous)
    assert _modes(tmp_path / "home" / "mcp-trust.json") == {"mcp-trust.json": "0o600"}

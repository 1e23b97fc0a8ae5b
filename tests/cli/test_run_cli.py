"""``dsh run`` as a real subprocess against the local OpenAI-compatible test server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Faults, Response, WireToolCall, http_error, stream_reply
from tests.patience import patience

KEY = "sk-live-DO-NOT-LEAK-0123456789"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL", "DSH_MODEL")
    }
    env.update({"DSH_STORE": f"sqlite:{tmp_path / 's.db'}", "NO_COLOR": "1", "PYTHONUTF8": "1"})
    env.update(extra)
    return env


def dsh(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def _two_step(req: RecordedRequest) -> Response:
    if any(m.get("role") == "tool" for m in req.messages):
        return stream_reply(text=["All ", "done."])
    args = json.dumps({"command": "echo CLI_OK", "description": "marker"})
    return stream_reply(
        reasoning=["Let me ", "run it."], tool_calls=[WireToolCall.split("call_1", "bash", args, 4)]
    )


def test_run_streams_runs_tools_and_stores_the_session(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=_two_step) as server:
        out = dsh(
            tmp_path,
            "run",
            "echo something",
            "--base-url",
            server.base_url,
            "--api-key",
            KEY,
            "--model",
            "m1",
        )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "All done.\n", "piped, stdout holds the answer alone"
    assert "bash" in out.stderr and "CLI_OK" in out.stderr, "the progress goes to stderr"
    (footer,) = [line for line in out.stderr.splitlines() if line.startswith("■ completed")]
    assert "inputTokens 24, outputTokens 10 · session " in footer, "one unwrapped footer line"
    assert KEY not in out.stdout + out.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert server.requests[0].json["model"] == "m1"
    assert KEY.encode() not in (tmp_path / "s.db").read_bytes()


def test_run_json_then_resume_continues_the_session(tmp_path: Path) -> None:
    with OpenAICompatServer(
        handler=lambda r: stream_reply(text="first" if len(r.messages) < 4 else "second")
    ) as server:
        first = dsh(tmp_path, "run", "one", "--json", "--base-url", server.base_url, DEEPSEEK_API_KEY=KEY)
        assert first.returncode == 0, first.stderr
        lines = [json.loads(line) for line in first.stdout.splitlines()]
        result = lines[-1]
        assert result["type"] == "result" and result["text"] == "first"
        session = result["sessionId"]
        assert lines[0]["type"] == "turn/start"
        assert all(x["sessionId"] == session for x in lines[:-1])
        second = dsh(tmp_path, "run", "two", "--json", "--resume", session, "--base-url", server.base_url,
                     DSH_API_KEY=KEY)  # fmt: skip
    assert second.returncode == 0, second.stderr
    last = json.loads(second.stdout.splitlines()[-1])
    assert last["sessionId"] == session and last["turn"] == 2 and last["text"] == "second"
    roles = [m["role"] for m in server.requests[1].json["messages"]]
    assert roles == ["system", "user", "user", "assistant", "user"]  # the prompt, then the runtime context


def test_missing_key_is_one_line(tmp_path: Path) -> None:
    out = dsh(tmp_path, "run", "hi")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("dsh: error: no API key")
    assert "DEEPSEEK_API_KEY" in out.stderr


def test_unknown_resume_id_is_one_line(tmp_path: Path) -> None:
    out = dsh(tmp_path, "run", "hi", "--resume", "nope", "--base-url", "http://127.0.0.1:9", DSH_API_KEY=KEY)
    assert out.returncode != 0
    assert out.stderr.count("\n") == 1 and "nope" in out.stderr and "Traceback" not in out.stderr


def test_auth_failure_exits_non_zero_with_one_line_and_no_key(tmp_path: Path) -> None:
    with OpenAICompatServer([http_error(401, f"Incorrect API key provided: {KEY}")]) as server:
        out = dsh(tmp_path, "run", "hi", "--base-url", server.base_url, "--api-key", KEY)
    assert out.returncode == 1
    assert len(server.requests) == 1  # AUTH is not retried
    assert out.stdout == ""
    errors = [line for line in out.stderr.splitlines() if line.startswith("dsh: error:")]
    assert len(errors) == 1 and "AUTH" in errors[0] and out.stderr.splitlines()[-1] == errors[0]
    assert KEY not in out.stdout + out.stderr
    assert KEY.encode() not in (tmp_path / "s.db").read_bytes()


def test_ctrl_c_cancels_the_turn_cleanly_and_exits_130(tmp_path: Path) -> None:
    stall = stream_reply(text=["Working", " on", " it"], faults=Faults(stall_after=2, stall_seconds=None))
    with OpenAICompatServer([stall]) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dsh.cli", "run", "slow", "--json", "--base-url", server.base_url],
            env=_env(tmp_path, DSH_API_KEY=KEY),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        assert proc.stdout is not None
        guard = threading.Timer(patience(60), proc.kill)  # a hang guard: EOF below, a red test
        guard.start()
        try:
            seen: list[str] = []  # until the first streamed delta: the turn is mid-stream (then stalls)
            while not seen or json.loads(seen[-1])["type"] != "delta":
                line = proc.stdout.readline()
                assert line, proc.communicate(timeout=patience(30))[1]
                seen.append(line)
        finally:
            guard.cancel()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=patience(30))
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    events = [json.loads(line) for line in "".join(seen).splitlines() + stdout.splitlines()]
    assert events[-1]["type"] == "turn/end"
    assert events[-1]["data"]["reason"]["kind"] == "aborted"
    session = events[0]["sessionId"]
    shown = dsh(tmp_path, "sessions", "show", session, "--events", "--json")
    assert shown.returncode == 0, shown.stderr
    stored = json.loads(shown.stdout)["events"]
    assert stored[-1]["type"] == "turn/end" and stored[-1]["data"]["reason"]["kind"] == "aborted"
    interrupted = [e for e in stored if e["type"] == "assistant/message"]
    assert interrupted and interrupted[0]["data"]["interrupted"] is True


def _delegating(req: RecordedRequest) -> Response:
    if req.prompt == "Say CHILD_OK" and not any(m.get("role") == "tool" for m in req.messages):
        return stream_reply(text=["CHILD", "_OK"])
    if any(m.get("role") == "tool" for m in req.messages):
        return stream_reply(text="PARENT_DONE")
    args = json.dumps({"description": "probe child", "prompt": "Say CHILD_OK"})
    return stream_reply(tool_calls=[WireToolCall.split("call_sub", "subagent", args, 2)])


def test_run_shows_delegations_live_with_the_child_label(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=_delegating) as server:
        out = dsh(tmp_path, "run", "delegate", "--base-url", server.base_url, DSH_API_KEY=KEY)
        tree = dsh(tmp_path, "sessions", "tree", "--json")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "PARENT_DONE\n"
    assert "[probe child]" in out.stderr and "CHILD_OK" in out.stderr and "⇢ spawn" in out.stderr
    assert "(with 1 subagent(s))" in out.stderr
    roots = json.loads(tree.stdout)
    assert roots[0]["children"][0]["kind"] == "spawn"


def test_a_torn_tail_warns_on_every_command_and_resume_records_the_repair(tmp_path: Path) -> None:
    store = {"DSH_STORE": f"jsonl:{tmp_path / 'sessions'}"}
    with OpenAICompatServer(handler=lambda r: stream_reply(text="fine")) as server:
        first = dsh(tmp_path, "run", "one", "--json", "--base-url", server.base_url, DSH_API_KEY=KEY, **store)
        assert first.returncode == 0, first.stderr
        sid = json.loads(first.stdout.splitlines()[-1])["sessionId"]
        path = tmp_path / "sessions" / f"{sid}.jsonl"
        torn = b'{"type":"turn/start","seq":99,"time":1,"da'
        with path.open("ab") as f:
            f.write(torn)
        warning = f"dsh: warning: {path}: dropped the incomplete last line"
        for command in (
            ("sessions", "list"),
            ("sessions", "show", sid),
            ("sessions", "tree"),
            ("sessions", "tree", sid),
            ("sessions", "export", sid),
            ("sessions", "tail", sid),
        ):
            out = dsh(tmp_path, *command, **store)
            assert out.returncode == 0, (command, out.stderr)
            lines = out.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith(warning), (command, out.stderr)
            assert f"{len(torn)} bytes" in lines[0]
        resumed = dsh(tmp_path, "run", "two", "--json", "--resume", sid, "--base-url", server.base_url,
                      DSH_API_KEY=KEY, **store)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.startswith(warning)
    shown = dsh(tmp_path, "sessions", "show", sid, "--events", "--json", **store)
    assert shown.returncode == 0 and shown.stderr == ""
    events = json.loads(shown.stdout)["events"]
    repairs = [e for e in events if e["type"] == "session/repaired"]
    assert len(repairs) == 1 and repairs[0]["data"] == {"droppedBytes": len(torn)}
    assert repairs[0]["ignorable"] is True
    assert events[-1]["type"] == "workspace/checkpoint" and events[-1]["ignorable"] is True  # dsh run's
    assert events[-2]["type"] == "turn/end" and events[-2]["data"]["turn"] == 2

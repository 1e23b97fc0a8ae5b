"""``dsh run`` options against the local test server: piped output, --system, --tools, stdin, -c, --cwd."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

from .test_run_cli import _env, _two_step, dsh


def _error_line(out: subprocess.CompletedProcess[str], *names: str) -> str:
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    (line,) = [line for line in out.stderr.splitlines() if line.startswith("dsh: error: ")]
    for name in names:
        assert name in line, (name, line)
    return line


def _with_stdin(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", "run", *args],
        env=_env(tmp_path), input=text, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip


def test_redirected_stdout_holds_exactly_the_answer_and_no_key_is_needed_locally(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    with OpenAICompatServer(handler=_two_step) as server, target.open("w") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "dsh.cli", "run", "echo something", "--base-url", server.base_url],
            env=_env(tmp_path),  # no API key anywhere: the base URL is 127.0.0.1
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == "All done.\n"
    assert "CLI_OK" in proc.stderr and "■ completed" in proc.stderr
    assert server.requests[0].headers["authorization"] == "Bearer local"
    session = proc.stderr.split("· session ")[-1].strip()
    plain, with_reasoning = dsh(tmp_path, "log", session[:8]), dsh(tmp_path, "log", session, "--reasoning")
    assert "- → **bash**" in plain.stdout and "- ← CLI_OK" in plain.stdout and "Let me" not in plain.stdout
    assert "> _reasoning:_ Let me run it." in with_reasoning.stdout


def test_system_tools_stdin_and_max_steps(tmp_path: Path) -> None:
    (tmp_path / "system.txt").write_text("You are terse.\n")
    seen: list[RecordedRequest] = []

    def handler(req: RecordedRequest) -> Response:
        seen.append(req)
        if any(m.get("content") == "loop" for m in req.messages if m.get("role") == "user"):
            args = json.dumps({"pattern": "*.txt"})
            return stream_reply(tool_calls=[WireToolCall.split(f"c{len(seen)}", "glob", args, 2)])
        return stream_reply(text="fine")

    with OpenAICompatServer(handler=handler) as server:
        url = ("--base-url", server.base_url)
        chosen = _with_stdin(
            tmp_path, "from stdin", "-", "--system", "@system.txt", "--tools", "read,glob", *url
        )
        piped = _with_stdin(tmp_path, "piped prompt\n", "--no-tools", "--system", "plain", *url)
        capped = dsh(tmp_path, "run", "loop", "--max-steps", "2", *url)
        unknown = dsh(tmp_path, "run", "x", "--tools", "read,grepx", *url)
        both = dsh(tmp_path, "run", "x", "--tools", "read", "--no-tools", *url)
        missing = dsh(tmp_path, "run", "x", "--system", "@absent.txt", *url)
    assert chosen.returncode == 0 and chosen.stdout == "fine\n", chosen.stderr
    first = seen[0].json
    assert first["messages"][0] == {"role": "system", "content": "You are terse.\n"}
    assert seen[0].prompt == "from stdin"
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["glob", "read"]
    assert piped.returncode == 0 and piped.stdout == "fine\n", piped.stderr
    second = seen[1].json
    assert second["messages"][0]["content"] == "plain" and not second.get("tools")
    assert seen[1].prompt == "piped prompt"  # one trailing newline of a stdin prompt is dropped (#35)
    assert len(seen) == 2 + 2, "--max-steps 2 stopped the looping turn after two model calls"
    _error_line(capped, "MAX_STEPS")
    _error_line(unknown, "grepx", "available: ask_user_question, bash")
    _error_line(both, "--tools", "--no-tools")
    _error_line(missing, "--system", "absent.txt")


def test_continue_resume_by_prefix_and_cwd_of_a_resumed_session(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with OpenAICompatServer(handler=lambda r: stream_reply(text=f"answer {len(r.messages)}")) as server:
        url = ("--base-url", server.base_url)
        first = json.loads(dsh(tmp_path, "run", "one", "--json", *url).stdout.splitlines()[-1])
        again = dsh(tmp_path, "run", "two", "-c", "--json", *url)
        by_prefix = dsh(
            tmp_path, "run", "three", "--resume", first["sessionId"][:8], "--cwd", str(tmp_path), *url
        )
        other = dsh(tmp_path, "run", "four", "--resume", first["sessionId"], "--cwd", str(elsewhere), *url)
        nothing = dsh(tmp_path, "run", "five", "--continue", "--cwd", str(elsewhere), *url)
        empty_store = dsh(tmp_path, "run", "six", "-c", *url, DSH_STORE=f"sqlite:{tmp_path / 'other.db'}")
    second = json.loads(again.stdout.splitlines()[-1])
    assert second["sessionId"] == first["sessionId"] and second["turn"] == 2
    assert by_prefix.returncode == 0 and by_prefix.stdout == "answer 7\n", by_prefix.stderr
    _error_line(other, first["sessionId"], str(tmp_path), str(elsewhere), "drop --cwd")
    _error_line(nothing, "--continue", str(elsewhere))
    _error_line(empty_store, "--continue")
    assert len(server.requests) == 3, "refused runs never reached the model"


def _delegating(req: RecordedRequest) -> Response:
    if req.prompt == "Say CHILD_OK":
        return stream_reply(text=["CHILD", "_OK"], usage={"prompt_tokens": 5, "completion_tokens": 2})
    if any(m.get("role") == "tool" for m in req.messages):
        return stream_reply(text="PARENT_DONE", usage={"prompt_tokens": 20, "completion_tokens": 3})
    args = json.dumps({"description": "probe child", "prompt": "Say CHILD_OK"})
    return stream_reply(
        tool_calls=[WireToolCall.split("call_sub", "subagent", args, 2)],
        usage={"prompt_tokens": 10, "completion_tokens": 1},
    )


def test_json_streams_deltas_and_counts_every_descendant(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=_delegating) as server:
        out = dsh(tmp_path, "run", "delegate", "--json", "--base-url", server.base_url)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    result = lines[-1]
    root = result["sessionId"]
    deltas = [x for x in lines if x["type"] == "delta"]
    assert [x["text"] for x in deltas if x["sessionId"] == root] == ["PARENT_DONE"]
    (child,) = {x["sessionId"] for x in deltas if x["sessionId"] != root}
    assert "".join(x["text"] for x in deltas if x["sessionId"] == child) == "CHILD_OK"
    assert all(x["kind"] == "text" for x in deltas)
    assert result["ownUsage"]["inputTokens"] == 30 and result["ownUsage"]["outputTokens"] == 4
    assert result["children"] == [{"sessionId": child, "usage": result["children"][0]["usage"]}]
    assert result["children"][0]["usage"]["inputTokens"] == 5
    assert result["usage"]["inputTokens"] == 35 and result["usage"]["outputTokens"] == 6

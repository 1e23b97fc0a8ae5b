"""A hostile stdio server through ``dsh run`` (issue #46, item 4): megabytes of junk on its
stdout are a few ``dsh: mcp server 'hostile' …`` lines on stderr, never tracebacks, and the
server still serves; a malformed answer to a call (broken JSON, an id no request had, a
result that is not an object) fails that call at once with a one-line tool error, long
before the call's 60 s timeout (the run ends with the error as the tool's result)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

from .conftest import KEY, SERVERS, dsh, write_config

HOSTILE = SERVERS / "hostile.py"


def hostile(*args: str) -> dict[str, object]:
    """A ``.mcp.json`` entry for the hostile server, a call allowed 60 s."""
    return {"command": sys.executable, "args": [str(HOSTILE), *args], "timeout": 60}


def echoing(req: RecordedRequest) -> Response:
    """A model that calls ``mcp__hostile__echo`` once, then says what the tool gave."""
    results = [m for m in req.messages if m.get("role") == "tool"]
    if results:
        return stream_reply(text=f"The tool said: {results[-1]['content']}")
    return stream_reply(tool_calls=[WireToolCall.split("call_echo", "mcp__hostile__echo", '{"text": "hi"}')])


def run_against(tmp_path: Path, *args: str) -> tuple[str, str, str]:
    """``dsh run`` with the hostile server: (stdout, stderr, the tool result the model got)."""
    config = write_config(tmp_path / "mcp.json", hostile=hostile(*args))
    with OpenAICompatServer(handler=echoing) as model:
        out = dsh(tmp_path, "run", "echo hi", "--mcp-config", str(config), "--base-url", model.base_url,
                  store=tmp_path / "s.db", DSH_API_KEY=KEY)  # fmt: skip
        sent = [m["content"] for r in model.requests for m in r.messages if m.get("role") == "tool"]
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(sent) == 1, sent
    return out.stdout, out.stderr, sent[0]


def server_lines(stderr: str) -> list[str]:
    """dsh's notice lines about the server (the live view's tool lines aside)."""
    assert "Traceback" not in stderr and len(stderr.splitlines()) <= 8, stderr[:3000]
    return [line for line in stderr.splitlines() if line.startswith("dsh: mcp server 'hostile'")]


def test_megabytes_of_junk_are_a_few_stderr_lines_and_the_server_still_serves(tmp_path: Path) -> None:
    stdout, stderr, result = run_against(tmp_path, "--spew", "24", "--spew-during", "8")
    assert result == "echo: hi"
    assert stdout == "The tool said: echo: hi\n"
    lines = server_lines(stderr)
    assert 1 <= len(lines) <= 2, lines
    assert "is not a JSON-RPC message" in lines[0], lines
    assert "\x1b" not in stderr, "the junk's escape sequence never reaches the terminal"


@pytest.mark.parametrize(
    ("how", "why"),
    [
        ("broken", "not JSON"),
        ("wrong-id", "id 1002 that no request has"),
        ("non-object", "its result is not an object"),
    ],
)
def test_a_malformed_answer_fails_its_call_at_once(tmp_path: Path, how: str, why: str) -> None:
    _stdout, stderr, result = run_against(tmp_path, "--spew", "4", "--answer", how)
    assert result.startswith("Error: mcp server 'hostile' sent a malformed answer to the call of 'echo': ")
    assert why in result and "\n" not in result, result
    assert "within 60 s" not in stderr
    lines = server_lines(stderr)
    assert len(lines) <= 3 and lines.count("dsh: " + result.removeprefix("Error: ")) == 1, lines

"""A secret the *model* writes never reaches a log, a view, an export or the next request.

A command can print the key transformed (base64 passes the exact-value masking, as the
threat model says) and the model decode it: its answer, its reasoning and its tool-call
arguments then carry the plain key, here split across streamed deltas too. Through
``dsh run`` (piped, then ``--json`` resuming the session) the key must appear nowhere:
the store's files, stdout, the requests the model received, ``dsh log`` (reasoning
included), ``dsh sessions export``, ``dsh export otel --content``, ``dsh diff`` and the
viewer's pages. What was shown live on a terminal is the terminal's; a ``--json`` delta
holding a whole value is masked too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

KEY = "sk-model-writes-DO-NOT-LEAK-5c1e9f0a77b3"
HALF = len(KEY) // 2
DSH = [sys.executable, "-m", "dsh.cli"]


def _handler(req: RecordedRequest) -> Response:
    tools = sum(1 for m in req.messages if m.get("role") == "tool")
    resumed = any(m.get("role") == "user" and "Once more." in str(m.get("content")) for m in req.messages)
    if not resumed and tools == 0:  # decode it, then use it in a command, split mid-value
        args = json.dumps({"command": f"echo {KEY} | wc -c", "description": "count"})
        at = args.index(KEY) + 7
        return stream_reply(
            reasoning=["The decoded key is ", KEY[:HALF], KEY[HALF:], "."],
            text=[f"Decoded: {KEY[:5]}", KEY[5:]],
            tool_calls=[WireToolCall("c1", "bash", (args[:at], args[at:]))],
        )
    if not resumed:
        return stream_reply(text=["The key is ", KEY[:HALF], KEY[HALF:], " (whole: ", KEY, ")"])
    return stream_reply(reasoning=[f"again {KEY}"], text=[f"Still {KEY[:9]}", f"{KEY[9:]}."])


def _dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_key_the_model_writes_is_masked_everywhere(tmp_path: Path) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_STORE": f"jsonl:{store}", "DSH_SANDBOX": "danger-full-access", "DEEPSEEK_API_KEY": KEY})
    with OpenAICompatServer(handler=_handler) as server:
        common = ["--base-url", server.base_url, "--model", "m"]
        first = _dsh("run", "Decode the key.", *common, env=env, cwd=ws)
        assert first.returncode == 0, first.stderr
        listed = json.loads(_dsh("sessions", "list", "--json", env=env, cwd=ws).stdout)
        sid = listed[0]["id"]
        second = _dsh("run", "Once more.", "--resume", sid, "--json", *common, env=env, cwd=ws)
        assert second.returncode == 0, second.stderr
        bodies = "\n".join(r.body.decode("utf-8", "replace") for r in server.requests)
    assert len(server.requests) == 3
    assert "***" in first.stdout  # the answer was there, masked
    stored = "".join(p.read_text("utf-8", "replace") for p in store.rglob("*") if p.is_file())
    assert "reasoning-delta" in stored and "***" in stored
    shown = {
        "log": _dsh("log", sid, env=env, cwd=ws),
        "log --reasoning": _dsh("log", sid, "--reasoning", env=env, cwd=ws),
        "export": _dsh("sessions", "export", sid, env=env, cwd=ws),
        "otel": _dsh("export", "otel", sid, "--content", env=env, cwd=ws),
        "diff": _dsh("diff", sid, sid, env=env, cwd=ws),
    }
    for name, done in shown.items():
        assert done.returncode == 0, (name, done.stderr)
    assert "***" in shown["log"].stdout and "***" in shown["otel"].stdout
    pages = _viewer_pages(sid, env, ws)
    places = {
        "requests": bodies,
        "store": stored,
        "stdout": first.stdout,
        "stdout --json": second.stdout,
        **{name: done.stdout + done.stderr for name, done in shown.items()},
        "viewer": pages,
    }
    for place, text in places.items():
        assert KEY not in text, place
        assert KEY.replace("-", "\\u002d") not in text, place


def _viewer_pages(sid: str, env: dict[str, str], cwd: Path) -> str:
    """The viewer's session page and its raw events, from a ``dsh ui`` process."""
    proc = subprocess.Popen(
        [*DSH, "ui", "--port", "0"], env={**env, "PYTHONUNBUFFERED": "1"}, cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(" at ", 1)[1].split(" ", 1)[0].rstrip("/")
        texts = []
        for path in (f"/s/{sid}", f"/s/{sid}/events", f"/api/sessions/{sid}"):
            page = httpx.get(f"{url}{path}", timeout=30)
            assert page.status_code == 200, (path, page.text[:300])
            texts.append(page.text)
        assert "***" in texts[0]
        return "\n".join(texts)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.parametrize("split", [False, True])
def test_a_masked_stream_replays_to_the_masked_message(split: bool) -> None:
    """The logged chunks assemble exactly the logged (masked) message: a replay serving them
    reproduces it, whether the value came whole in one delta or split across two."""
    from dsh.events import BlockAssembler
    from dsh.tools.redaction import Redaction

    parts = ["is ", KEY[:HALF], KEY[HALF:], "!"] if split else ["is ", KEY, "!"]
    chunks: list[dict[str, object]] = [{"type": "text-delta", "index": 0, "text": p} for p in parts]
    chunks.append({"type": "finish", "reason": {"kind": "stop"}})
    data = {
        "turn": 1,
        "step": 1,
        "message": {"role": "assistant", "content": [{"type": "text", "text": "is " + KEY + "!"}]},
        "stream": {"chunks": chunks, "dt": [1] * (len(chunks) - 1)},
    }
    masked = Redaction((KEY,)).event_data(data)
    assert KEY not in json.dumps(masked)
    assert masked["message"]["content"] == [{"type": "text", "text": "is ***!"}]
    assert len(masked["stream"]["chunks"]) == len(chunks)
    assembler = BlockAssembler()
    for chunk in masked["stream"]["chunks"]:
        assembler.feed(chunk)
    assert assembler.result().content == masked["message"]["content"]

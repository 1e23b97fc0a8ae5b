"""Helpers for the dsh serve tests: requests rebuilt from a recording, deltas as plain data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from dsh.events.chunks import Chunk
from dsh.model import ModelRequest
from dsh.model.openai_wire import request_body
from dsh.replay.derive import derive
from dsh.replay.files import read_recorded

SCENARIOS = Path(__file__).resolve().parents[2] / "src" / "dsh" / "snapshot" / "scenarios"


def recorded_calls(directory: Path, label: str = "session.jsonl") -> list[tuple[dict[str, Any], list[Chunk]]]:
    """For each recorded call of one log: the Chat Completions body dsh sent, and the chunks."""
    logs = read_recorded(directory)
    loaded = logs.primary if label == "session.jsonl" else dict(logs.children)[label]
    assert loaded is not None
    cut = loaded.inherited_event_count
    derived = derive(loaded.events[cut:], label, inherited=loaded.events[:cut])
    out = []
    for call, entry in zip(derived.calls, derived.entries, strict=True):
        header = call.header or {}
        config = header.get("config") or {}
        tools = header.get("tools")
        request = ModelRequest(
            "s", str(config.get("model")), derived.messages[: call.history], header.get("system"),
            tools if isinstance(tools, list) else (), config.get("maxTokens"),
        )  # fmt: skip
        body = request_body(request, request.model)
        body.pop("stream")
        body.pop("stream_options")
        out.append((body, list(entry.chunks)))
    return out


def expected_deltas(chunks: list[Chunk]) -> list[tuple[str, Any]]:
    """The deltas a client must see for recorded chunks, in order."""
    out: list[tuple[str, Any]] = []
    for chunk in chunks:
        if chunk["type"] == "text-delta":
            out.append(("content", chunk["text"]))
        elif chunk["type"] == "reasoning-delta":
            out.append(("reasoning", chunk["text"]))
        elif chunk["type"] == "tool-call-delta":
            out.append(("arguments", chunk["argumentsDelta"]))
    return out


def client_deltas(chunks: list[Any]) -> list[tuple[str, Any]]:
    """What an ``openai`` SDK client received, as (kind, value), empty deltas left out."""
    out: list[tuple[str, Any]] = []
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            reasoning = getattr(delta, "reasoning_content", None) or (delta.model_extra or {}).get(
                "reasoning_content"
            )
            if reasoning:
                out.append(("reasoning", reasoning))
            if delta.content:
                out.append(("content", delta.content))
            for call in delta.tool_calls or ():
                if call.function is not None and call.function.arguments:
                    out.append(("arguments", call.function.arguments))
    return out


def wire_view(chunks: list[Any]) -> list[dict[str, Any]]:
    """Every chunk a client received, without ids and timestamps (compare record vs replay)."""
    out = []
    for chunk in chunks:
        data = chunk.model_dump(exclude_none=True)
        data.pop("id", None)
        data.pop("created", None)
        data.pop("model", None)
        data.pop("system_fingerprint", None)
        out.append(data)
    return out


def slowed(directory: Path, target: Path, gap_ms: int) -> Path:
    """A copy of ``directory``'s ``session.jsonl`` in ``target`` with every recorded gap ``gap_ms``."""
    target.mkdir()
    lines = []
    for line in (directory / "session.jsonl").read_text().splitlines():
        event = json.loads(line)
        stream = event.get("data", {}).get("stream") if isinstance(event.get("data"), dict) else None
        if isinstance(stream, dict):
            stream["dt"] = [gap_ms] * len(stream["dt"])
        lines.append(json.dumps(event, separators=(",", ":"), ensure_ascii=False))
    (target / "session.jsonl").write_text("\n".join(lines) + "\n")
    return target


def start_serve(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str, str]:
    """``dsh serve ARGS`` as a process: (the process, its base URL, its control token)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dsh.cli", "serve", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    if " on http://127.0.0.1:" not in line:
        process.kill()
        _, err = process.communicate(timeout=20)
        raise AssertionError(f"dsh serve did not start: {line!r} {err}")
    token = process.stdout.readline().split("control token ", 1)[1].split()[0]
    return process, line.strip().rsplit(" on ", 1)[1], token


def control(base_url: str, route: str, token: str | None, *, method: str = "GET") -> dict[str, Any]:
    """``/_dsh/ROUTE`` of the server at ``base_url`` with ``token`` in ``X-Dsh-Token``."""
    headers = {"X-Dsh-Token": token} if token is not None else {}
    url = base_url.removesuffix("/v1") + "/_dsh/" + route
    data = b"" if method == "POST" else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def stop(process: subprocess.Popen[str], timeout: float = 20) -> tuple[str, str]:
    """Wait for ``process`` to end (killing it after ``timeout``): its stdout and stderr."""
    try:
        return process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

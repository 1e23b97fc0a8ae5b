"""The ``full`` profile's transcript of the bundled subagent recordings, pinned as golden files.

Each run: initialize, session/new, the recording's prompts, then session/load of the same
session (history replay with delegations) and session/list. Session ids, message ids, the
cwd, times and the dsh version are normalized. Regenerate with ``DSH_ACP_REGOLD=1``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.acp.wire import RawServer, server_args, workspace_for
from tests.conftest import UPSTREAM

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = ["subagent-fork-in-process", "subagent-spawn-in-process"]
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalize(frames: list[dict[str, Any]], cwd: str) -> list[dict[str, Any]]:
    sessions: dict[str, str] = {}
    messages: dict[str, str] = {}

    def text(value: str) -> str:
        value = value.replace(cwd, "{{cwd}}")
        return _UUID.sub(
            lambda m: sessions.setdefault(m.group(0), f"{{{{session:{len(sessions) + 1}}}}}"), value
        )

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if not isinstance(value, str):
            return value
        if key == "messageId":
            return messages.setdefault(value, f"{{{{message:{len(messages) + 1}}}}}")
        if key == "updatedAt":
            return "{{time}}"
        if key == "version":
            return "{{version}}"
        return text(value)

    return [walk(frame) for frame in frames]


async def transcript(scenario: Path, tmp: Path) -> list[dict[str, Any]]:
    steps = json.loads((scenario / "input.json").read_text())["steps"]
    cwd = workspace_for(scenario, tmp)
    args = server_args(replay=scenario, store=f"sqlite:{tmp / 's.db'}", profile="full")
    async with RawServer(args, stderr_path=tmp / "stderr") as server:
        await server.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session_id = (await server.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"][
            "sessionId"
        ]
        for step in steps:
            if step["op"] == "prompt":
                prompt = [{"type": "text", "text": step["text"]}]
                await server.call("session/prompt", {"sessionId": session_id, "prompt": prompt})
        await server.call("session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []})
        await server.call("session/list", {"cwd": str(cwd)})
        assert await server.close() == 0
    return normalize(server.frames, str(cwd))


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    if not UPSTREAM.is_dir():
        pytest.skip(f"upstream fixtures not found at {UPSTREAM} (CI always has them)")

    async def both() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(
            *(transcript(UPSTREAM / s, tmp_path_factory.mktemp(s)) for s in SCENARIOS)
        )

    # A replayed call is made now, and the bundled table prices deepseek-v4-flash by the time
    # of day: a flat price of the user's file keeps the pinned cost the same at any hour.
    prices = tmp_path_factory.mktemp("prices") / "prices.json"
    prices.write_text(json.dumps({"models": [{"model": "deepseek-v4-flash", "input": 0.25, "output": 1.0}]}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DSH_PRICES", str(prices))
        return dict(zip(SCENARIOS, asyncio.run(both()), strict=True))


@pytest.mark.fixtures
@pytest.mark.parametrize("name", SCENARIOS)
def test_full_profile_transcript_is_pinned(transcripts: dict[str, list[dict[str, Any]]], name: str) -> None:
    path = GOLDEN / f"{name}.full.jsonl"
    got = transcripts[name]
    if os.environ.get("DSH_ACP_REGOLD") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text("".join(json.dumps(frame, ensure_ascii=False) + "\n" for frame in got))
    expected = [json.loads(line) for line in path.read_text().splitlines()]
    assert got == expected


@pytest.mark.fixtures
def test_delegation_names_the_child_session_and_kind(transcripts: dict[str, list[dict[str, Any]]]) -> None:
    for name, kind in (("subagent-fork-in-process", "fork"), ("subagent-spawn-in-process", "spawn")):
        updates = [f["params"]["update"] for f in transcripts[name] if f.get("method") == "session/update"]
        named = [
            u for u in updates
            if u["sessionUpdate"] in ("tool_call", "tool_call_update") and "_meta" in u
        ]  # fmt: skip
        assert named, name
        for update in named:
            assert update["_meta"]["dsh/subagent"] == {"sessionId": "{{session:2}}", "kind": kind}
            assert (
                update["content"][0]["content"]["text"] == f"{kind} subagent: child session {{{{session:2}}}}"
            )

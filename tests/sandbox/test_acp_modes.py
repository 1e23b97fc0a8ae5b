"""ACP session modes: the three file policies advertised by session/new, switched by session/set_mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.store.url import open_store
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import WireToolCall, stream_reply
from tests.acp.wire import RawServer
from tests.sandbox.conftest import requires_bwrap

KEY = "sk-dsh-acp-SECRET-0123456789"
MODE_IDS = ["read-only", "workspace-write", "danger-full-access"]


def _touch(call_id: str, name: str) -> WireToolCall:
    command = f"touch ../{name}; echo done"
    return WireToolCall.split(call_id, "bash", json.dumps({"command": command, "description": "touch"}), 2)


def _snapshots(messages: list[dict[str, Any]]) -> list[str]:
    return [
        str(m["content"])
        for m in messages
        if m.get("role") == "user" and str(m.get("content")).startswith("Current runtime context.")
    ]


async def _logged(db: Path, session_id: str, etype: str) -> list[dict[str, Any]]:
    store = open_store(f"sqlite:{db}")
    try:
        loaded = await store.load(session_id)
    finally:
        await store.close()
    return [e.data for e in loaded.events if e.type == etype]


@requires_bwrap
async def test_set_mode_switches_what_bash_runs_under_and_what_the_model_is_told(base: Path) -> None:
    """Over the real stdio: session/new advertises the three policies (current
    workspace-write); under it the kernel refuses a write outside the workspace; after
    session/set_mode danger-full-access the same write goes through, the log says
    ``sandbox/mode``, and the next request carries a new runtime-context snapshot
    (red with set_session_mode leaving the policy as it was)."""
    cwd = base / "ws"
    db = base / "s.db"
    async with OpenAICompatServer() as provider:
        provider.enqueue(
            stream_reply(tool_calls=[_touch("c1", "before.txt")]),
            stream_reply(text="ok"),
            stream_reply(tool_calls=[_touch("c2", "after.txt")]),
            stream_reply(text="ok"),
        )
        args = ["--base-url", provider.base_url, "--api-key", KEY, "--model", "test-model"]
        args += ["--store", f"sqlite:{db}"]
        async with RawServer(args, stderr_path=base / "stderr") as server:
            await server.call("initialize", {"protocolVersion": 1})
            reply = await server.call("session/new", {"cwd": str(cwd), "mcpServers": []})
            modes = reply["result"]["modes"]
            assert modes["currentModeId"] == "workspace-write"
            assert [m["id"] for m in modes["availableModes"]] == MODE_IDS
            session_id = reply["result"]["sessionId"]
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
            assert (await server.call("session/prompt", prompt))["result"] == {"stopReason": "end_turn"}
            bad = await server.call("session/set_mode", {"sessionId": session_id, "modeId": "yolo"})
            assert bad["error"]["code"] == -32602 and "workspace-write" in bad["error"]["message"]
            switched = await server.call(
                "session/set_mode", {"sessionId": session_id, "modeId": "danger-full-access"}
            )
            assert switched["result"] == {}
            assert (await server.call("session/prompt", prompt))["result"] == {"stopReason": "end_turn"}
            loaded = await server.call(
                "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
            )
            assert loaded["result"]["modes"]["currentModeId"] == "danger-full-access"
            assert await server.close() == 0
        requests = [r.json["messages"] for r in provider.requests]
    assert not (base / "before.txt").exists()  # refused by the kernel under workspace-write
    assert (base / "after.txt").exists()  # the next bash call ran under danger-full-access
    first, _, third, fourth = (_snapshots(m) for m in requests)
    assert (
        len(first) == 1 and "file policy: workspace-write" in first[0] and "Approval policy: ask" in first[0]
    )
    assert len(third) == 2 and "file policy: danger-full-access" in third[1]
    assert "Approval prompts are disabled" in third[1]
    assert fourth == third  # appended once: unchanged at the next step
    assert [e["mode"] for e in await _logged(db, session_id, "sandbox/mode")] == [
        "workspace-write",
        "danger-full-access",
    ]


async def test_the_compat_profile_advertises_no_modes(tmp_path: Path, upstream: Path) -> None:
    """The original's session/new result is bare: ``--profile dsh-compat`` keeps it so."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    args = ["--replay", str(upstream / "text-turn"), "--profile", "dsh-compat"]
    args += ["--store", f"sqlite:{tmp_path / 's.db'}"]
    async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
        await server.call("initialize", {"protocolVersion": 1})
        reply = await server.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        assert set(reply["result"]) == {"sessionId"}
        assert await server.close() == 0

"""``dsh acp`` live sessions run bash under the session's file policy (workspace-write by default)."""

from __future__ import annotations

import json
from pathlib import Path

from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import WireToolCall, stream_reply
from tests.acp.wire import RawServer
from tests.sandbox.conftest import requires_bwrap

KEY = "sk-dsh-acp-SECRET-0123456789"


@requires_bwrap
async def test_live_sessions_confine_bash_to_the_workspace_by_default(base: Path) -> None:
    """``dsh acp`` without ``--sandbox``: workspace-write — the kernel refuses a write outside
    the workspace, one inside succeeds; ``--sandbox danger-full-access`` lets both through."""
    command = "touch inside.txt; touch ../escaped.txt; echo done"
    call = WireToolCall.split("c1", "bash", json.dumps({"command": command, "description": "touch"}), 2)
    for flags, escaped in (((), False), (("--sandbox", "danger-full-access"), True)):
        run = base / (flags[-1] if flags else "default")
        cwd = run / "work"
        cwd.mkdir(parents=True)
        async with OpenAICompatServer() as provider:
            provider.enqueue(stream_reply(tool_calls=[call]), stream_reply(text="ok"))
            args = ["--base-url", provider.base_url, "--api-key", KEY, "--model", "test-model", *flags]
            args += ["--store", f"sqlite:{run / 's.db'}"]
            async with RawServer(args, stderr_path=run / "stderr") as server:
                await server.call("initialize", {"protocolVersion": 1})
                reply = await server.call("session/new", {"cwd": str(cwd), "mcpServers": []})
                text = [{"type": "text", "text": "go"}]
                prompt = {"sessionId": reply["result"]["sessionId"], "prompt": text}
                assert (await server.call("session/prompt", prompt))["result"] == {"stopReason": "end_turn"}
                assert await server.close() == 0
        assert (cwd / "inside.txt").exists()
        assert (run / "escaped.txt").exists() is escaped, flags

"""``dsh acp`` against a live OpenAI-compatible endpoint (the local test server, still keyless)."""

from __future__ import annotations

from pathlib import Path

from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import http_error, stream_reply, wire_usage
from tests.acp.wire import RawServer

KEY = "sk-dsh-acp-SECRET-0123456789"


async def test_live_model_streams_and_a_failed_turn_is_an_error(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    log = tmp_path / "server.log"
    async with OpenAICompatServer() as provider:
        provider.enqueue(
            stream_reply(reasoning="hm", text=["Hel", "lo"], usage=wire_usage(10, 3)),
            http_error(401, "invalid api key"),
        )
        args = ["--base-url", provider.base_url, "--api-key", KEY, "--model", "test-model"]
        args += ["--store", f"sqlite:{tmp_path / 's.db'}", "--log-file", str(log)]
        async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
            await server.call("initialize", {"protocolVersion": 1})
            reply = await server.call("session/new", {"cwd": str(cwd), "mcpServers": []})
            session_id = reply["result"]["sessionId"]
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
            assert (await server.call("session/prompt", prompt))["result"] == {"stopReason": "end_turn"}
            updates = [f["params"]["update"] for f in server.frames if f.get("method") == "session/update"]
            assert [(u["sessionUpdate"], u.get("content", {}).get("text")) for u in updates] == [
                ("agent_thought_chunk", "hm"),
                ("agent_message_chunk", "Hel"),
                ("agent_message_chunk", "lo"),
                ("usage_update", None),
            ]
            assert updates[-1]["used"] == 13
            failed = await server.call("session/prompt", prompt)
            assert failed["error"]["code"] == -32603
            assert failed["error"]["message"].startswith("Internal error: turn failed: ")
            assert "\n" not in failed["error"]["message"]
            assert await server.close() == 0
        assert provider.requests[0].json["model"] == "test-model"
    assert KEY not in b"".join(server.raw).decode()
    assert KEY not in log.read_text()
    assert (tmp_path / "stderr").read_text() == ""

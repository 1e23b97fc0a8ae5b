"""``dsh acp`` against a live OpenAI-compatible endpoint (the local test server, still keyless)."""

from __future__ import annotations

import json
from pathlib import Path

from dsh.store import SqliteEventStore
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import WireToolCall, http_error, stream_reply, wire_usage
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
                ("available_commands_update", None),  # after session/new: the slash commands
                ("session_info_update", None),  # the fallback title of the first prompt
                ("agent_thought_chunk", "hm"),
                ("agent_message_chunk", "Hel"),
                ("agent_message_chunk", "lo"),
                ("usage_update", None),
            ]
            assert updates[-1]["used"] == 13
            assert updates[1]["title"] == "hello"
            failed = await server.call("session/prompt", prompt)
            assert failed["error"]["code"] == -32603
            assert failed["error"]["message"].startswith("Internal error: turn failed: ")
            assert "\n" not in failed["error"]["message"]
            assert await server.close() == 0
        assert provider.requests[0].json["model"] == "test-model"
    assert KEY not in b"".join(server.raw).decode()
    assert KEY not in log.read_text()
    assert (tmp_path / "stderr").read_text() == ""
    # dsh acp checkpoints the workspace after every turn, the failed one too (what dsh rewind restores)
    async with SqliteEventStore(tmp_path / "s.db") as store:
        events = (await store.load(session_id)).events
    checkpoints = [e.data["turn"] for e in events if e.type == "workspace/checkpoint"]
    assert checkpoints == [1, 2]


async def test_a_question_is_the_client_s_permission_request(tmp_path: Path) -> None:
    """``ask_user_question`` over ACP: the choices as a ``session/request_permission``; the
    client's pick is the answer (a question without choices is refused with a clear text)."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    question = {"id": "mode", "question": "Which mode?", "options": [{"label": "fast"}, {"label": "safe"}]}
    open_ended = {"id": "name", "question": "Name?"}
    calls = [
        WireToolCall.split("q1", "ask_user_question", json.dumps({"questions": [question]}), 1),
        WireToolCall.split("q2", "ask_user_question", json.dumps({"questions": [open_ended]}), 1),
    ]
    async with OpenAICompatServer() as provider:
        provider.enqueue(stream_reply(tool_calls=calls), stream_reply(text="ok"))
        args = ["--base-url", provider.base_url, "--api-key", KEY, "--model", "m"]
        args += ["--store", f"sqlite:{tmp_path / 's.db'}"]
        async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
            await server.call("initialize", {"protocolVersion": 1})
            session_id = (await server.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"][
                "sessionId"
            ]
            pending = await server.start(
                "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
            )
            asked = await server.wait_for(lambda f: f.get("method") == "session/request_permission")
            params = asked["params"]
            assert params["toolCall"] == {"toolCallId": "q1", "title": "Which mode?"}
            assert [o["name"] for o in params["options"]] == ["fast", "safe", "Skip"]
            choice = params["options"][1]["optionId"]
            await server.send(
                {
                    "jsonrpc": "2.0",
                    "id": asked["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": choice}},
                }
            )
            assert (await server.response(pending))["result"] == {"stopReason": "end_turn"}
            assert await server.close() == 0
    results = [m["content"] for m in provider.requests[1].json["messages"] if m["role"] == "tool"]
    assert results[0] == '{"answers":[{"id":"mode","selected":["safe"]}]}'
    assert results[1].startswith("Error: the ACP client can only pick among choices")

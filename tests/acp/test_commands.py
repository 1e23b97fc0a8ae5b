"""The ``compact`` slash command over the real ACP transport: advertised, run instead of a
turn, answered with one message chunk of its outcome (``end_turn``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply
from tests.acp.wire import RawServer

KEY = "sk-dsh-acp-SECRET-0123456789"
LONG = "remember this: " + "the sky is blue and water is wet " * 30


def _reply(req: RecordedRequest) -> Response:
    if req.prompt.startswith("Stop the task for a moment"):  # the summary request's instruction
        return stream_reply(text="## Current Work\n- the facts")
    return stream_reply(text=f"ANSWER to {req.prompt[:12]}")


def _updates(frames: list[dict[str, Any]], since: int = 0) -> list[dict[str, Any]]:
    return [f["params"]["update"] for f in frames[since:] if f.get("method") == "session/update"]


async def test_slash_compact_is_advertised_and_runs_instead_of_a_turn(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    async with OpenAICompatServer(handler=_reply) as provider:
        args = ["--base-url", provider.base_url, "--api-key", KEY, "--model", "test-model"]
        args += ["--store", f"sqlite:{tmp_path / 's.db'}"]
        async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
            await server.call("initialize", {"protocolVersion": 1})
            session_id = (await server.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"][
                "sessionId"
            ]
            advertised = await server.wait_for(
                lambda f: (
                    f.get("params", {}).get("update", {}).get("sessionUpdate") == "available_commands_update"
                )
            )
            assert [c["name"] for c in advertised["params"]["update"]["availableCommands"]] == ["compact"]

            async def prompt(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
                before = len(server.frames)
                reply = await server.call(
                    "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
                )
                return reply, _updates(server.frames, before)

            reply, updates = await prompt("/compact")
            assert reply["result"] == {"stopReason": "end_turn"}
            assert [(u["sessionUpdate"], u["content"]["text"]) for u in updates] == [
                ("agent_message_chunk", "nothing to compact yet")
            ]
            await prompt(LONG)
            await prompt("second")
            calls = len(provider.requests)
            reply, updates = await prompt("/compact")
            assert reply["result"] == {"stopReason": "end_turn"} and len(provider.requests) == calls + 1
            chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
            assert len(chunks) == 1 and re.fullmatch(r"compacted \d+ messages, \d+ → \d+ tokens", chunks[0])
            reply, updates = await prompt("/compact now")
            assert [u["content"]["text"] for u in updates] == ["/compact takes no arguments"]
            reply, _ = await prompt("third")
            assert reply["result"] == {"stopReason": "end_turn"}
            loaded = await server.call(
                "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
            )
            assert "error" not in loaded
            kinds = [u["sessionUpdate"] for u in _updates(server.frames)]
            assert kinds.count("available_commands_update") == 2  # after session/new and session/load
            assert await server.close() == 0
        last = provider.requests[-1].json["messages"]
    texts = [str(m.get("content")) for m in last]
    assert any("the facts" in t for t in texts) and not any(LONG in t for t in texts)
    assert (tmp_path / "stderr").read_text() == ""

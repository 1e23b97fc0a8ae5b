"""The ``compact`` slash command over the real ACP transport: advertised, run instead of a
turn, answered with one message chunk of its outcome (``end_turn``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dsh.events.history import history_messages
from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Faults, Response, stream_reply
from tests.acp.wire import RawServer
from tests.patience import until

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


def _stalling(req: RecordedRequest) -> Response:
    if req.prompt.startswith("Stop the task for a moment"):  # the summary never finishes
        return stream_reply(text=["## Current", " Work"], faults=Faults(stall_after=2, stall_seconds=None))
    return stream_reply(text=f"ANSWER to {req.prompt[:12]}")


async def test_session_cancel_cancels_a_running_compact_and_the_history_is_unchanged(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    store = tmp_path / "s.db"
    async with OpenAICompatServer(handler=_stalling) as provider:
        args = ["--base-url", provider.base_url, "--api-key", KEY, "--model", "test-model"]
        args += ["--store", f"sqlite:{store}"]
        async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
            await server.call("initialize", {"protocolVersion": 1})
            session_id = (await server.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"][
                "sessionId"
            ]
            for text in (LONG, "second"):
                prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
                assert (await server.call("session/prompt", prompt))["result"] == {"stopReason": "end_turn"}
            calls = len(provider.requests)
            command = {"sessionId": session_id, "prompt": [{"type": "text", "text": "/compact"}]}
            pending = await server.start("session/prompt", command)
            await until(lambda: len(provider.requests) > calls, "the summary call started", gone=server.gone)
            busy = await server.call("session/prompt", command)
            assert busy["error"]["message"] == "Invalid params: a prompt is already in flight"
            await server.notify("session/cancel", {"sessionId": session_id})
            assert (await server.response(pending))["result"] == {"stopReason": "cancelled"}
            assert await server.close() == 0
    reader = SqliteEventStore(store)
    try:
        events = (await reader.load(session_id)).events
    finally:
        await reader.close()
    end = next(e for e in events if e.type == "compaction/end")
    done = next(e for e in events if e.type == "command/done")
    assert (
        end.data["error"] == "cancelled" and done.data["kind"] == "error" and done.data["text"] == "cancelled"
    )
    assert "compaction/summary" not in [e.type for e in events]
    assert history_messages(events)[0].text.startswith("remember this")

"""Bad input on the wire: each case is a proper JSON-RPC error, and the process keeps serving."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.acp.wire import RawServer, scenario_copy, server_args

pytestmark = pytest.mark.fixtures

TEXT = "BACK"
CHUNKS: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": TEXT},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": TEXT}},
    {"type": "finish", "reason": {"kind": "stop"}},
]


def error_of(frame: dict[str, Any]) -> dict[str, Any]:
    assert "result" not in frame, frame
    error = frame["error"]
    assert isinstance(error, dict)
    return error


def assert_error(frame: dict[str, Any], code: int, message: str | None = None) -> None:
    error = error_of(frame)
    assert error["code"] == code, frame
    if message is not None:
        assert error["message"] == message
    assert error.get("data", "absent") is not None, "a null data must be left out"


async def assert_serving(server: RawServer) -> None:
    reply = await server.call("session/list", {})
    assert "sessions" in reply["result"]


async def test_bad_input_gets_errors_and_the_server_keeps_serving(tmp_path: Path, upstream: Path) -> None:
    ready = tmp_path / "ready"
    script = [
        {"kind": "hang", "readyFile": str(ready)},
        {
            "kind": "throw",
            "chunks": [],
            "code": "AUTH",
            "message": "simulated provider error (HTTP 401)\nmore",
        },
        {"kind": "chunks", "chunks": CHUNKS},
    ]
    scenario = scenario_copy(upstream / "text-turn", tmp_path / "scenario", override=script)
    cwd = tmp_path / "work"
    cwd.mkdir()
    args = server_args(replay=scenario, store=f"sqlite:{tmp_path / 's.db'}", log=tmp_path / "log")
    args += ["--drift", "warn"]  # the prompts deliberately differ from the recording's
    async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
        # Not JSON, not an object, not a request: answered with id null.
        await server.send_raw(b"{this is not json\n")
        parse = await server.wait_for(lambda f: f.get("id") is None and "error" in f)
        assert parse == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        for junk in (b"[1, 2]\n", b"42\n", b'{"jsonrpc": "2.0"}\n', b'{"id": 77, "method": 5}\n'):
            count = len(server.frames)
            await server.send_raw(junk)
            frame = await server.wait_for(partial(_more_than, server, count))
            assert_error(frame, -32600, "Invalid Request")
        await server.send_raw(b"\n   \n")

        init = await server.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        assert (await server.call("authenticate", {"methodId": "none"}))["result"] == {}

        # Unknown and unsupported methods: -32601, never a silent null.
        for method in ("session/frobnicate", "session/resume", "session/close",
                       "session/delete", "logout", "_dsh/extension"):  # fmt: skip
            params = {"sessionId": "x", "modeId": "m", "cwd": str(cwd), "mcpServers": []}
            assert_error(await server.call(method, params), -32601)
        assert_error(await server.call("session/set_mode", {"sessionId": "x", "modeId": "read-only"}), -32602)
        await server.notify("session/frobnicate", {})
        await server.notify("session/cancel", {"sessionId": "no-such-session"})

        # session/new: relative, missing, not a directory, unsupported extras.
        relative = await server.call("session/new", {"cwd": "work", "mcpServers": []})
        assert_error(relative, -32602, "Invalid params: cwd must be an absolute path: work")
        assert_error(await server.call("session/new", {"mcpServers": []}), -32602)
        missing = await server.call("session/new", {"cwd": str(tmp_path / "nope"), "mcpServers": []})
        assert_error(missing, -32602, f"Invalid params: cwd is not a directory: {tmp_path / 'nope'}")
        dirs = {"cwd": str(cwd), "mcpServers": [], "additionalDirectories": [str(tmp_path)]}
        assert_error(
            await server.call("session/new", dirs),
            -32602,
            "Invalid params: additionalDirectories is not supported",
        )
        mcp = [{"name": "fs", "command": "/bin/true", "args": [], "env": []}]
        offered = await server.call("session/new", {"cwd": str(cwd), "mcpServers": mcp})
        assert "sessionId" in offered["result"]  # accepted, not connected (logged)
        created = await server.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        session_id = created["result"]["sessionId"]

        # Unknown session ids.
        unknown = {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}
        assert_error(await server.call("session/prompt", unknown), -32602)
        load = {"sessionId": "no-such-session", "cwd": str(cwd), "mcpServers": []}
        assert_error(
            await server.call("session/load", load), -32602, "Invalid params: unknown session no-such-session"
        )

        # Prompt content the server did not advertise, and an empty prompt.
        image = [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]
        assert_error(await server.call("session/prompt", {"sessionId": session_id, "prompt": image}), -32602)
        empty = await server.call("session/prompt", {"sessionId": session_id, "prompt": []})
        assert_error(empty, -32602, "Invalid params: the prompt is empty")

        # A second prompt while one is in flight; then cancel the first.
        text = [{"type": "text", "text": "go"}]
        first = await server.start("session/prompt", {"sessionId": session_id, "prompt": text})
        second = await server.call("session/prompt", {"sessionId": session_id, "prompt": text})
        assert_error(second, -32602, "Invalid params: a prompt is already in flight")
        await server.wait_for(  # the model's first chunk (the commands and the title come before)
            lambda f: (
                f.get("method") == "session/update"
                and f["params"]["update"]["sessionUpdate"]
                not in ("session_info_update", "available_commands_update")
            )
        )
        assert ready.exists()
        busy_load = await server.call(
            "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
        )
        assert_error(busy_load, -32602)
        await server.notify("session/cancel", {"sessionId": session_id})
        assert (await server.response(first))["result"] == {"stopReason": "cancelled"}

        # A failed turn is an error with the failure's first line; the session stays usable.
        failed = await server.call("session/prompt", {"sessionId": session_id, "prompt": text})
        assert_error(failed, -32603, "Internal error: turn failed: simulated provider error (HTTP 401)")
        ok = await server.call("session/prompt", {"sessionId": session_id, "prompt": text})
        assert ok["result"] == {"stopReason": "end_turn"}
        await assert_serving(server)
        code = await server.close()
    assert code == 0
    assert (tmp_path / "stderr").read_text() == ""
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in server.raw)


def _more_than(server: RawServer, count: int, _frame: dict[str, Any]) -> bool:
    """``wait_for``'s predicate: a frame arrived after the first ``count``."""
    return len(server.frames) > count


async def test_a_request_with_an_id_but_no_method_is_answered_with_its_id(tmp_path: Path) -> None:
    """Issue 46 item 6c: ``{"id": 9}`` (no ``method``, no ``result``/``error``) is a request the
    server cannot read: -32600 with the same id, not silence. A client's response to nothing
    (``id`` and ``result``) still gets no answer: JSON-RPC never answers a response."""
    args = server_args(replay=None, store=f"sqlite:{tmp_path / 's.db'}", log=tmp_path / "log")
    async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
        cases: list[tuple[Any, dict[str, Any]]] = [(9, {}), ("x", {"params": {}}), (7.5, {"params": []})]
        for request_id, extra in cases:
            await server.send({"jsonrpc": "2.0", "id": request_id, **extra})
            frame = await server.wait_for(partial(_has_id, request_id))
            assert frame == {"jsonrpc": "2.0", "id": request_id,
                             "error": {"code": -32600, "message": "Invalid Request"}}  # fmt: skip
        await server.send({"jsonrpc": "2.0", "id": 4242, "result": {}})
        await server.send({"jsonrpc": "2.0", "id": 4243, "error": {"code": 1, "message": "no"}})
        await assert_serving(server)  # answered after the two responses were read
        assert [f for f in server.frames if f.get("id") in (4242, 4243)] == []
        code = await server.close()
    assert code == 0


def _has_id(request_id: Any, frame: dict[str, Any]) -> bool:
    return bool(frame.get("id") == request_id)

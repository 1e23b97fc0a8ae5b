"""Deeply nested input on the wire: a parse error (-32700) for the line, and the server keeps serving."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.acp.wire import RawServer, scenario_copy, server_args

pytestmark = pytest.mark.fixtures

TOO_DEEP = {"code": -32700, "message": "Parse error", "data": "the JSON is nested deeper than 64 levels"}
NOT_JSON = {"code": -32700, "message": "Parse error"}


def nested_request(request_id: int, depth: int) -> bytes:
    params = {"cursor": "[" * depth + "]" * depth}
    text = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "session/list", "params": params})
    return text.replace(json.dumps(params["cursor"]), params["cursor"]).encode() + b"\n"


async def test_nested_brackets_get_a_parse_error_and_the_server_keeps_serving(
    tmp_path: Path, upstream: Path
) -> None:
    scenario = scenario_copy(upstream / "text-turn", tmp_path / "scenario")
    args = server_args(replay=scenario, store="memory:", log=tmp_path / "log")
    async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
        for line, error in (
            (b"[" * 4096 + b"\n", TOO_DEEP),  # the red-team line: 4 KB of brackets
            (b"{" * 4096 + b"\n", NOT_JSON),  # invalid at its second byte
            (b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"\n", TOO_DEEP),  # valid JSON, 3000 deep
            (nested_request(7, 900), TOO_DEEP),  # a request whose params nest 900 deep
            (nested_request(8, 65), TOO_DEEP),
        ):
            count = len(server.frames)
            await server.send_raw(line)
            frame = await server.wait_for(partial(_more_than, server, count))
            assert frame == {"jsonrpc": "2.0", "id": None, "error": error}
        # Nesting within the limit is an ordinary request (here: a bad cursor, -32602).
        await server.send_raw(nested_request(9, 60))
        reply = await server.response(9)
        assert reply["error"]["code"] == -32602
        assert "sessions" in (await server.call("session/list", {}))["result"]
        code = await server.close()
    assert code == 0
    assert (tmp_path / "stderr").read_text() == ""
    assert "Traceback" not in (tmp_path / "log").read_text()


def _more_than(server: RawServer, count: int, _frame: dict[str, Any]) -> bool:
    """``wait_for``'s predicate: a frame arrived after the first ``count``."""
    return len(server.frames) > count

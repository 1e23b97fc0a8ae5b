"""``dsh run`` reaches a FastMCP stdio server from the workspace's ``.mcp.json`` (trusted with
``DSH_TRUST_MCP=1``: ``test_workspace_trust_cli.py`` is about that): the model sees
``mcp__calc__add`` with the server's schema, the server is called once, the call is logged;
``dsh scenario save`` keeps what the replay needs and the scenario replays with the server's
file gone (no server started); ``--live-mcp`` calls it again. ``dsh chat --mcp-config FILE``
offers and calls the file's server the same way."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

from .conftest import KEY, adding, calc_entry, copy_calc, dsh, write_config


def _logged(store: Path, etype: str) -> list[dict[str, Any]]:
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT data FROM events WHERE type = ? ORDER BY seq", (etype,)).fetchall()
    return [json.loads(r[0]) for r in rows]


def test_run_calls_the_workspace_server_once_and_the_scenario_replays_without_it(tmp_path: Path) -> None:
    workspace, calls, store = tmp_path / "ws", tmp_path / "calls.txt", tmp_path / "s.db"
    server = copy_calc(tmp_path / "servers")
    workspace.mkdir()
    write_config(workspace / ".mcp.json", calc=calc_entry(server, calls))
    with OpenAICompatServer(handler=adding) as model:
        # a piped run starts the workspace's servers only when trusted
        out = dsh(workspace, "run", "add 2 and 3", "--json", "--base-url", model.base_url, store=store,
                  DSH_API_KEY=KEY, DSH_TRUST_MCP="1")  # fmt: skip
        assert out.returncode == 0, out.stderr
        tools = {t["function"]["name"]: t["function"] for t in model.requests[0].json["tools"]}
    assert tools["mcp__calc__add"]["parameters"] == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    assert tools["mcp__calc__add"]["description"] == "Add two integers."
    assert calls.read_text() == "2+3\n", "the server was called once"
    result = json.loads(out.stdout.splitlines()[-1])
    assert "The sum is 5." in json.dumps(result)
    (call,) = [c for c in _logged(store, "tool/call") if c["name"] == "mcp__calc__add"]
    assert json.loads(call["arguments"]) == {"a": 2, "b": 3}
    (logged,) = _logged(store, "tool/result")
    assert logged["meta"]["mcp"]["server"] == "calc" and logged["meta"]["mcp"]["tool"] == "add"
    assert isinstance(logged["meta"]["mcp"]["durationMs"], int)
    assert "5" in json.dumps(logged)

    session = result.get("sessionId") or result["session_id"]
    saved = tmp_path / "scenario"
    save = dsh(workspace, "scenario", "save", session, str(saved), "--workspace", str(workspace), store=store)
    assert save.returncode == 0, save.stderr
    server.unlink()  # the server's file is gone: the replay must not need it
    replayed = dsh(tmp_path, "replay", str(saved), "--trust", "--json", store=tmp_path / "r.db")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout)["ok"] is True
    assert calls.read_text() == "2+3\n", "no server was started by the replay"

    copy_calc(tmp_path / "servers")  # back again: --live-mcp starts it and calls it for real
    live = dsh(tmp_path, "replay", str(saved), "--trust", "--json", "--live-mcp", store=tmp_path / "l.db")
    assert live.returncode == 0, live.stdout + live.stderr
    assert calls.read_text() == "2+3\n2+3\n", "--live-mcp called the server again"


def test_chat_offers_and_calls_the_server_of_its_mcp_config_file(tmp_path: Path) -> None:
    workspace, calls, store = tmp_path / "ws", tmp_path / "calls.txt", tmp_path / "s.db"
    workspace.mkdir()  # no .mcp.json: the server comes from the file only
    config = write_config(tmp_path / "mcp.json", calc=calc_entry(copy_calc(tmp_path / "servers"), calls))
    with OpenAICompatServer(handler=adding) as model:
        out = dsh(workspace, "chat", "--mcp-config", str(config), "--base-url", model.base_url, store=store,
                  stdin="add 2 and 3\n", DSH_API_KEY=KEY)  # fmt: skip
        assert out.returncode == 0, out.stderr
        requests = [r.json for r in model.requests]
    assert len(requests) == 2
    assert "mcp__calc__add" in {t["function"]["name"] for t in requests[0]["tools"]}
    assert calls.read_text() == "2+3\n", "the server was called once"
    (sent,) = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert sent["content"] == "5"
    assert "The sum is 5." in out.stdout
    (call,) = [c for c in _logged(store, "tool/call") if c["name"] == "mcp__calc__add"]
    assert json.loads(call["arguments"]) == {"a": 2, "b": 3}
    (logged,) = _logged(store, "tool/result")
    assert logged["meta"]["mcp"] | {"durationMs": 0} == {"server": "calc", "tool": "add", "durationMs": 0}
    (block,) = logged["message"]["content"]
    assert block["toolCallId"] == "call_add" and block["content"] == [{"type": "text", "text": "5"}]


def test_a_bad_mcp_config_is_one_line_naming_the_file_and_server(tmp_path: Path) -> None:
    bad = write_config(tmp_path / "bad.json", calc={"command": ""})
    out = dsh(tmp_path, "run", "hi", "--mcp-config", str(bad), "--base-url", "http://127.0.0.1:9",
              store=tmp_path / "s.db", DSH_API_KEY=KEY)  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert (
        out.stderr.strip()
        .splitlines()[-1]
        .endswith(f"{bad}: server 'calc': 'command' must be a non-empty string")
    )
    missing = dsh(tmp_path, "chat", "--mcp-config", str(tmp_path / "nope.json"), store=tmp_path / "s.db")
    assert missing.returncode == 2 and f"{tmp_path / 'nope.json'}: no such MCP config file" in missing.stderr


def _crashing(req: RecordedRequest) -> Response:
    if any(m.get("role") == "tool" for m in req.messages):
        return stream_reply(text="It crashed.")
    return stream_reply(tool_calls=[WireToolCall.split("call_crash", "mcp__calc__crash", "{}")])


def test_a_server_dying_mid_call_is_one_tool_error_and_one_line_never_a_crashed_turn(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", calc=calc_entry(copy_calc(tmp_path / "servers")))
    with OpenAICompatServer(handler=_crashing) as model:
        out = dsh(tmp_path, "run", "crash it", "--mcp-config", str(config), "--base-url", model.base_url,
                  store=tmp_path / "s.db", DSH_API_KEY=KEY)  # fmt: skip
        sent = [m for m in model.requests[1].messages if m.get("role") == "tool"]
    assert out.returncode == 0, out.stderr
    assert out.stdout == "It crashed.\n"
    line = "dsh: mcp server 'calc' exited during the call of 'crash' (stderr: calc: crashing on purpose)"
    assert out.stderr.count(line) == 1, out.stderr
    assert sent[0]["content"] == "Error: " + line.removeprefix("dsh: ")

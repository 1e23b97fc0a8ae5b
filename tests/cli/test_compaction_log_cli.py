"""Compactions in the CLI, run as a real subprocess: ``dsh log`` (Markdown, --originals,
--json), ``dsh sessions list`` and ``dsh run --json`` — sessions the real loop compacted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import WireToolCall, http_error, stream_reply
from tests.compacted import FAILURE, PROMPT, SECOND, compacted, failed

from .conftest import Dsh

PREAMBLE_START = "This is a checkpoint the harness wrote"


def _store(tmp_path: Path, make: str = "compacted") -> tuple[Dsh, str]:
    db = tmp_path / "s.db"
    sid = asyncio.run((compacted if make == "compacted" else failed)(db))
    return Dsh(f"sqlite:{db}", tmp_path), sid


def test_log_shows_each_compaction_with_its_span_and_summary(tmp_path: Path) -> None:
    dsh, sid = _store(tmp_path)
    out = dsh("log", sid).ok().stdout
    (head,) = [line for line in out.splitlines() if line.startswith("── compacted")]
    assert head.startswith("── compacted turns 1–2: 5 messages, ") and head.endswith(" tokens ──")
    before, after = head.split(": 5 messages, ")[1].removesuffix(" tokens ──").split(" → ")
    assert int(before.replace(",", "")) > int(after.replace(",", "")) > 0
    # the summary follows, escaped; the checkpoint's framing never shows, nor as a prompt
    assert "- the two answers <b>bold</b> \\x1b[31mred" in out and "\x1b" not in out
    assert PREAMBLE_START not in out and "compacted-summary" not in out
    # by default the replaced messages print once, where they happened (the transcript)
    assert out.count(SECOND.strip()) == 1 and out.index(SECOND.strip()) < out.index(head)
    assert out.index(head) < out.index("third answer")
    assert "## Turn 3" in out and "## Turn 4" not in out


def test_log_originals_lists_the_replaced_messages_in_the_block(tmp_path: Path) -> None:
    dsh, sid = _store(tmp_path)
    out = dsh("log", sid, "--originals").ok().stdout
    block = out[out.index("── compacted") :]
    assert "replaced messages" in block and block.count(SECOND.strip()) == 1
    assert PROMPT.strip()[:40] in block and "→ **bash**" in block
    assert "alpha" in block  # the tool's result, in full
    assert "second answer" not in block.split("third")[0]  # kept on the history, not replaced


def test_log_json_carries_the_compaction_record(tmp_path: Path) -> None:
    dsh, sid = _store(tmp_path)
    lines = [json.loads(line) for line in dsh("log", sid, "--json").ok().stdout.splitlines()]
    assert all(line["session"] == sid for line in lines)
    types = [line["type"] for line in lines]
    assert types.count("prompt") == 3 and types.count("compaction") == 1
    (record,) = [line for line in lines if line["type"] == "compaction"]
    assert record["sessionId"] == sid and record["replacedMessages"] == 5 and record["error"] is None
    assert record["turns"] == {"first": 1, "last": 2} and record["turn"] is None
    assert record["tokensBefore"] > record["tokensAfter"] > 0 and len(record["shadowedSeqs"]) == 5
    assert record["summary"].startswith("## Current Work")
    assert [o["role"] for o in record["originals"]] == ["user", "assistant", "user", "assistant", "user"]
    assert record["originals"][1]["toolCalls"][0]["name"] == "bash"
    assert record["originals"][0]["text"] == PROMPT
    assert types.index("compaction") < len(types) - 1 - types[::-1].index("prompt")


def test_a_failed_compaction_is_one_line_saying_the_history_is_unchanged(tmp_path: Path) -> None:
    dsh, sid = _store(tmp_path, "failed")
    out = dsh("log", sid).ok().stdout
    (line,) = [x for x in out.splitlines() if "compaction failed" in x]
    assert line == f"── compaction failed: the history is unchanged ({FAILURE}) ──"
    record = next(
        json.loads(x) for x in dsh("log", sid, "--json").ok().stdout.splitlines() if '"compaction"' in x
    )
    assert record["error"] == FAILURE and record["replacedMessages"] == 0 and record["turn"] == 1


def test_sessions_list_counts_compactions(tmp_path: Path) -> None:
    dsh, sid = _store(tmp_path)
    (row,) = [r for r in dsh("sessions", "list", "--json").json() if r["id"] == sid]
    assert row["compactions"] == 1
    table = dsh("sessions", "list").ok().stdout.splitlines()
    assert "compacted" in table[0]
    cells = table[1].split()
    assert cells[table[0].split().index("compacted")] == "1"


def test_run_json_prints_a_compaction_record_live(tmp_path: Path) -> None:
    args = json.dumps({"command": "echo alpha"})
    replies = [
        stream_reply(tool_calls=[WireToolCall.split("call_1", "bash", args, 2)]),
        http_error(400, "This model's maximum context length is 100 tokens"),
        stream_reply(text="## Current Work\n- echo alpha ran"),
        stream_reply(text="RECOVERED"),
    ]
    dsh = Dsh(f"sqlite:{tmp_path / 's.db'}", tmp_path)
    with OpenAICompatServer(replies) as server:
        out = dsh("run", PROMPT, "--json", "--base-url", server.base_url, "--api-key", "k", "--model", "m")
    lines = [json.loads(line) for line in out.ok().stdout.splitlines()]
    types = [line["type"] for line in lines]
    (record,) = [line for line in lines if line["type"] == "compaction"]
    assert types.index("compaction") == types.index("user/message", types.index("compaction/summary")) + 1
    summary = next(line for line in lines if line["type"] == "compaction/summary")
    assert record["replacedMessages"] == len(summary["data"]["shadowedSeqs"]) >= 1
    assert record["turn"] == 1 and record["turns"] == {"first": 1, "last": 1}
    assert record["summary"] == "## Current Work\n- echo alpha ran" and "originals" not in record
    assert lines[-1]["type"] == "result" and lines[-1]["text"] == "RECOVERED"


def test_run_live_view_says_a_compaction_happened(tmp_path: Path) -> None:
    args = json.dumps({"command": "echo alpha"})
    replies = [
        stream_reply(tool_calls=[WireToolCall.split("call_1", "bash", args, 2)]),
        http_error(400, "This model's maximum context length is 100 tokens"),
        stream_reply(text="## Current Work\n- echo alpha ran"),
        stream_reply(text="RECOVERED"),
    ]
    dsh = Dsh(f"sqlite:{tmp_path / 's.db'}", tmp_path)
    with OpenAICompatServer(replies) as server:
        out = dsh("run", PROMPT, "--base-url", server.base_url, "--api-key", "k", "--model", "m").ok()
    assert out.stdout == "RECOVERED\n"
    (line,) = [x for x in out.stderr.splitlines() if "⟲" in x]
    assert line.startswith("⟲ compacted turn 1: ") and line.endswith(" tokens")


def test_sessions_show_and_export_print_the_same_transcript_with_originals(tmp_path: Path) -> None:
    dsh, sid = _store(tmp_path)
    logged = dsh("log", sid, "--originals").ok().stdout
    assert "replaced messages" in logged
    assert dsh("sessions", "show", sid, "--transcript", "--originals").ok().stdout == logged
    assert dsh("sessions", "export", sid, "--format", "markdown", "--originals").ok().stdout == logged
    assert "replaced messages" not in dsh("sessions", "export", sid, "--format", "markdown").ok().stdout

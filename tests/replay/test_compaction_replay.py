"""A version-0 recording shaped like the original's compaction recovery (reference §1.13): a
step whose call overflows the context window, the four compaction events in that step, and
the retried call. dsh decodes it with its compaction events and replays it strictly: the live
loop compacts the same span, its summary call is served from ``compaction/summary``, and the
retried request shows the checkpoint where the prompt was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.events.history import history_messages
from dsh.replay.derive import derive
from dsh.replay.files import read_recorded
from dsh.snapshot import run_scenario

PROMPT = (
    "Note these compaction facts: the checkpoint replaces the head, the originals stay in the log, " * 11
) + "then run the marker command and finish with COMPACTION RECOVERED."
SUMMARY = "The user asked to note compaction facts and run a marker."
PREAMBLE = "The original's own preamble, worded differently from dsh's."
CID = "4f8c2a1e-0000-4000-8000-000000000001"
CALL = "call_compaction_marker"
ARGS = json.dumps({"command": "echo alpha", "description": "Print the marker"})


def _chunks(turn: int, step: int, chunks: list[dict[str, Any]]) -> list[tuple[str, Any, dict[str, Any]]]:
    return [("assistant/chunk", {"turn": turn, "step": step, "chunk": c}, {}) for c in chunks]


def _events() -> list[tuple[str, Any, dict[str, Any]]]:
    prompt = {
        "content": [{"type": "text", "text": PROMPT}],
        "source": {"kind": "user"},
        "role": "user",
        "id": "m-1",
    }
    route = {"provider": "deepseek-official", "model": "deepseek-v4-flash"}
    call_block = {"type": "tool-call", "id": CALL, "name": "bash", "arguments": ARGS}
    answer = {"type": "text", "text": "COMPACTION RECOVERED"}
    out: list[tuple[str, Any, dict[str, Any]]] = [
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [prompt]}, {}),
        ("turn/start", {"turn": 1}, {}),
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}, {}),
        ("step/start", {"turn": 1, "step": 1}, {}),
        ("user/message", prompt, {"surfaceOp": "append"}),
        ("session/title", {"title": "Note these compaction", "messageSeqs": [4],
                           "source": {"kind": "fallback"}}, {}),
        ("request/header", {"header": {"config": route, "system": "sys", "tools": []},
                            "reason": "initial"}, {}),
        ("request/context", {**route, "contextWindow": 128000}, {}),
        *_chunks(1, 1, [
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": CALL, "name": "bash", "argumentsDelta": ARGS},
            {"type": "block-end", "index": 0, "block": call_block},
            {"type": "usage", "usage": {"inputTokens": 24, "outputTokens": 6}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ]),
    ]  # fmt: skip
    chunk_seqs = list(range(8, 13))
    out += [
        ("assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [call_block],
         "source": {"kind": "model", **route}, "id": "m-2"}, "usage": {"inputTokens": 24, "outputTokens": 6}},
         {"surfaceOp": "append", "sourceEventSeqs": chunk_seqs}),
        ("tool/call", {"turn": 1, "step": 1, "callId": CALL, "name": "bash", "arguments": ARGS}, {}),
        ("tool/result", {"turn": 1, "step": 1, "message": {"source": {"kind": "tool", "callId": CALL},
         "content": [{"type": "tool-result", "toolCallId": CALL,
                      "content": [{"type": "text", "text": "alpha\n"}], "isError": False}],
         "role": "user", "id": "m-3"}}, {"surfaceOp": "append", "sourceEventSeqs": [14]}),
        ("step/end", {"turn": 1, "step": 1}, {}),
        ("step/start", {"turn": 1, "step": 2}, {}),
        *_chunks(1, 2, [{"type": "finish", "reason": {"kind": "error", "failure": {
            "message": "context window exceeded", "code": "CONTEXT_WINDOW_EXCEEDED"}}}]),
        ("compaction/start", {"compactionId": CID, "turn": 1}, {}),
        ("compaction/summary", {"compactionId": CID, "summary": [{"type": "text", "text": SUMMARY}],
         "rawOutput": [{"type": "text", "text": SUMMARY}], "llmStreamCall": True,
         "shadowedRange": {"start": 4, "end": 4}, "shadowedSeqs": [4], "shadowedTokenCount": 266,
         "provider": route["provider"], "model": route["model"], "maxTokens": 32,
         "usage": {"inputTokens": 20, "outputTokens": 4}}, {}),
        ("user/message", {"content": [{"type": "text", "text": f"{PREAMBLE}\n\n<compacted-summary>"},
         {"type": "text", "text": SUMMARY}, {"type": "text", "text": "</compacted-summary>"}],
         "source": {"kind": "plugin", "plugin": "compact", "compactionId": CID}, "role": "user", "id": "m-4"},
         {"sourceEventSeqs": [19, 20, 4], "surfaceOp": {"op": "replace", "start": 4, "end": 4}}),
        ("compaction/end", {"compactionId": CID, "turn": 1}, {}),
        *_chunks(1, 2, [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "COMPACTION RECOVERED"},
            {"type": "block-end", "index": 0, "block": answer},
            {"type": "usage", "usage": {"inputTokens": 20, "outputTokens": 4}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ]),
        ("assistant/message", {"turn": 1, "step": 2, "message": {"role": "assistant", "content": [answer],
         "source": {"kind": "model", **route}, "id": "m-5"}, "usage": {"inputTokens": 20, "outputTokens": 4}},
         {"surfaceOp": "append", "sourceEventSeqs": list(range(23, 28))}),
        ("step/end", {"turn": 1, "step": 2}, {}),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, {}),
    ]  # fmt: skip
    return out


def _write(directory: Path) -> None:
    directory.mkdir()
    header = {"type": "session", "version": 0, "id": "{{sessionId}}", "createdAt": 0, "cwd": "{{cwd}}",
              "delegationDepth": 0}  # fmt: skip
    lines = [json.dumps(header)]
    for seq, (etype, data, extra) in enumerate(_events()):
        lines.append(json.dumps({"type": etype, "seq": seq, "time": 1000 + seq, "data": data, **extra}))
    (directory / "session.jsonl").write_text("\n".join(lines) + "\n")
    steps = [{"op": "initialize"}, {"op": "newSession"}, {"op": "prompt", "text": PROMPT}]
    (directory / "input.json").write_text(json.dumps({"steps": steps}))


def test_a_compacting_recording_decodes_with_its_compaction_events(tmp_path: Path) -> None:
    _write(tmp_path / "rec")
    loaded = read_recorded(tmp_path / "rec").primary
    assert loaded is not None
    types = [e.type for e in loaded.events]
    assert types[19:23] == ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
    assert [m.seq for m in history_messages(loaded.events)] == [21, 13, 15, 28]
    derived = derive(loaded.events, "rec")
    assert len(derived.entries) == 4  # the call, the failed call, the summary, the retry
    summary_call = derived.calls[2]
    assert [derived.messages[i]["id"] for i in derived.history_of(summary_call)][:1] == ["m-1"]


async def test_a_compacting_recording_replays_strictly(tmp_path: Path) -> None:
    _write(tmp_path / "rec")
    result = await run_scenario(tmp_path / "rec", "replay")
    assert result.ok, result.failure_text()

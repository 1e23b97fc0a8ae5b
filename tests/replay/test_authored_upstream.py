"""Recordings in the original's format built from a given one, for behaviours the corpus
shows only in scenarios we were not given (fs-glob-sampling, inline-image-prompt): each
replays strictly, through the scenario runner and over ACP with ``--profile dsh-compat``."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from dsh.snapshot import run_scenario
from tests.acp.test_upstream import _agent_request_ids, drive
from tests.acp.wire import upstream_normalize

TREE = ["archive/a.ts", "archive/b.ts", "archive/c.ts", "docs/guide.md", "src/index.ts", "test/spec.ts",
        "top.txt", "notes.md"]  # fmt: skip
GLOB_TEXT = (
    "tree/archive/a.ts\ntree/docs/guide.md\ntree/src/index.ts\ntree/test/spec.ts\n\n(Showing 4 of 8 paths, "
    "sampled across 4 of the 6 top-level entries this pattern matched instead of taken in modification-time "
    "order. Narrow path to inspect a specific subtree. The complete result could not be saved; narrow "
    "pattern or path to see more.)"
)
RED_ID = "sha256:b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640"


def _rewrite(source: Path, target: Path, edit: Any) -> None:
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    log = target / "session.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    for row in rows:
        edit(row)
    log.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))


def glob_sampling(upstream: Path, tmp: Path) -> Path:
    """read-image with its one call turned into the original's fs-glob-sampling call and result."""
    target = tmp / "fs-glob-sampling"
    arguments = '{"pattern": "*", "path": "tree"}'

    def edit(row: dict[str, Any]) -> None:
        text = json.dumps(row)
        text = text.replace('"read_image"', '"glob"').replace(
            json.dumps('{"file_path":"red.png"}'), json.dumps(arguments)
        )
        row.clear()
        row.update(json.loads(text))
        if row["type"] == "tool/result":
            block = row["data"]["message"]["content"][0]
            block["content"] = [{"type": "text", "text": GLOB_TEXT}]
            shown = GLOB_TEXT.split("\n\n")[0].splitlines()
            row["data"]["meta"] = {"shape": "paths", "paths": shown, "truncated": True, "total": 8}

    _rewrite(upstream / "read-image", target, edit)
    (target / "workspace" / "red.png").unlink()
    for i, name in enumerate(TREE, start=1):
        path = target / "workspace" / "tree" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("fixture\n")
        stamp = 946_684_800_000_000_000 + i * 1_000_000
        os.utime(path, ns=(stamp, stamp))
    return target


def inline_image_prompt(upstream: Path, tmp: Path) -> Path:
    """read-image prompted with the original's inline-image-prompt content (text, image, text)."""
    target = tmp / "inline-image-prompt"
    red = (upstream / "read-image" / "workspace" / "red.png").read_bytes()
    ref = {"attachmentId": RED_ID, "mediaType": "image/png", "width": 1, "height": 1, "bytes": 69}
    content = [
        {"type": "text", "text": "Inspect this image, then reply with exactly "},
        {"type": "image", "attachment": ref},
        {"type": "text", "text": "the single word DONE."},
    ]

    def edit(row: dict[str, Any]) -> None:
        if row.get("seq") == 0:
            row["data"]["inserted"][0]["content"] = content
        if row.get("seq") == 4:
            row["data"]["content"] = content

    _rewrite(upstream / "read-image", target, edit)
    blocks = [
        {"type": "text", "text": "Inspect this image, then reply with exactly "},
        {"type": "image", "mimeType": "image/png", "data": base64.b64encode(red).decode()},
        {"type": "text", "text": "the single word DONE."},
    ]
    steps = [{"op": "initialize"}, {"op": "newSession"}, {"op": "promptContent", "content": blocks}]
    (target / "input.json").write_text(json.dumps({"steps": steps}))
    return target


GENTLE = (
    "You are repeating the exact same tool call with identical arguments. Carefully analyze the previous "
    "result before calling again: if the task is not complete, try a different approach or different "
    "arguments instead of repeating the call."
)
ARGS = (
    '{"todos":[{"content":"read the code","status":"in_progress"},{"content":"watch the background build",'
    '"status":"in_progress"},{"content":"write the fix","status":"pending"}]}'
)
DETAILED = (
    f"Repeated tool call detected:\n- tool: todo_write\n- consecutive_calls: 5\n- arguments: {ARGS}\n"
    "The repeated calls are not making progress. Do not call this tool with these exact arguments again. "
    "Inspect the latest result and choose a different action, different arguments, or finish the task if "
    "enough evidence has been gathered."
)


def _reminder(text: str, count: int, n: int) -> dict[str, Any]:
    source = {
        "kind": "plugin",
        "plugin": "repeat-tool-reminder",
        "form": "notice",
        "summary": f"todo_write × {count}",
    }
    message = {"content": [{"type": "text", "text": text}], "source": source, "role": "user",
               "id": f"0a0a0a0a-0000-4000-8000-00000000000{n}"}  # fmt: skip
    return {"type": "user/message", "seq": -1, "time": 0, "data": message, "surfaceOp": "append"}


def first(row: dict[str, Any]) -> int:
    """A row's (first) seq: packed rows carry ``seq0``."""
    return int(row.get("seq", row.get("seq0", -1)))


def repeat_tool_reminder(upstream: Path, tmp: Path) -> Path:
    """todo-write with its one todo_write call made five times (ids call_1..call_5): the
    original's gentle reminder opens step 4, the detailed one step 6 (repeat-tool-reminder)."""
    target = tmp / "repeat-tool-reminder"
    shutil.copytree(upstream / "todo-write", target)
    log = target / "session.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    header, events = rows[0], rows[1:]
    sizes = {first(a): first(b) - first(a) for a, b in itertools.pairwise(events)}
    sizes[first(events[-1])] = 1
    opening = [r for r in events if first(r) <= 8]
    block = [r for r in events if 9 <= first(r) <= 99]
    answer = [r for r in events if 102 <= first(r) <= 112]
    old_id = "call_00_UHvM5RrwIkjNJ9xh3S735164"

    def mark(kind: str, step: int) -> dict[str, Any]:
        return {"type": kind, "seq": -1, "time": 0, "data": {"turn": 1, "step": step}}

    def restep(part: list[dict[str, Any]], step: int, call: str | None) -> list[dict[str, Any]]:
        text = json.dumps(part).replace(old_id, call or old_id)
        out: list[dict[str, Any]] = json.loads(text)
        for row in out:
            if isinstance(row["data"], dict) and "step" in row["data"]:
                row["data"]["step"] = step
        return out

    out: list[dict[str, Any]] = list(opening)
    for n in range(1, 6):
        if n > 1:
            out.append(mark("step/start", n))
        if n == 4:
            out.append(_reminder(GENTLE, 3, 1))
        out += restep(block, n, f"call_{n}")
        out.append(mark("step/end", n))
    out += [mark("step/start", 6), _reminder(DETAILED, 5, 2), *restep(answer, 6, None), mark("step/end", 6)]
    out.append(
        {"type": "turn/end", "seq": -1, "time": 0, "data": {"turn": 1, "reason": {"kind": "completed"}}}
    )
    seq, lines = 0, [json.dumps(header)]
    for row in out:
        size = sizes[first(row)] if first(row) >= 0 else 1  # synthesized rows are one event each
        row["seq0" if "seq0" in row else "seq"] = seq
        row.pop("sourceEventSeqs", None)
        seq += size
        lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
    log.write_text("\n".join(lines) + "\n")
    return target


BUILDERS = {
    "fs-glob-sampling": glob_sampling,
    "inline-image-prompt": inline_image_prompt,
    "repeat-tool-reminder": repeat_tool_reminder,
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
async def test_replays_strictly(upstream: Path, tmp_path: Path, name: str) -> None:
    scenario = BUILDERS[name](upstream, tmp_path)
    result = await run_scenario(scenario, "replay")
    assert result.ok, result.failure_text()
    report = result.sessions[0]
    calls = 5 if name == "repeat-tool-reminder" else 1
    assert report.divergence is None and report.tool_results.equal == report.tool_results.total == calls
    assert report.not_reproduced == []
    assert report.final_text == "DONE"


@pytest.mark.parametrize("name", sorted(BUILDERS))
async def test_replays_over_acp_as_the_original(upstream: Path, tmp_path: Path, name: str) -> None:
    scenario = BUILDERS[name](upstream, tmp_path / "fixture")
    (tmp_path / "run").mkdir()
    run = await drive(scenario, tmp_path / "run")
    assert run.problems == [] and run.exit_code == 0, run.stderr
    assert [upstream_normalize(f) for f in _agent_request_ids(run.frames[1:])] == run.expected[1:]
    images = run.frames[0]["result"]["agentCapabilities"]["promptCapabilities"]["image"]
    assert images is (name != "repeat-tool-reminder")  # only the image recordings' model takes images

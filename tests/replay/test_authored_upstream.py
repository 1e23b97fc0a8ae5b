"""Recordings in the original's format built from a given one, for behaviours the corpus
shows only in scenarios we were not given (fs-glob-sampling, inline-image-prompt): each
replays strictly, through the scenario runner and over ACP with ``--profile dsh-compat``."""

from __future__ import annotations

import base64
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


BUILDERS = {"fs-glob-sampling": glob_sampling, "inline-image-prompt": inline_image_prompt}


@pytest.mark.parametrize("name", sorted(BUILDERS))
async def test_replays_strictly(upstream: Path, tmp_path: Path, name: str) -> None:
    scenario = BUILDERS[name](upstream, tmp_path)
    result = await run_scenario(scenario, "replay")
    assert result.ok, result.failure_text()
    report = result.sessions[0]
    assert report.divergence is None and report.tool_results.equal == report.tool_results.total == 1
    assert report.final_text == "DONE"


@pytest.mark.parametrize("name", sorted(BUILDERS))
async def test_replays_over_acp_as_the_original(upstream: Path, tmp_path: Path, name: str) -> None:
    scenario = BUILDERS[name](upstream, tmp_path / "fixture")
    run = await drive(scenario, tmp_path / "run")
    assert run.problems == [] and run.exit_code == 0, run.stderr
    assert [upstream_normalize(f) for f in _agent_request_ids(run.frames[1:])] == run.expected[1:]
    assert run.frames[0]["result"]["agentCapabilities"]["promptCapabilities"]["image"] is True

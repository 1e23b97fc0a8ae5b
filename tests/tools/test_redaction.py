"""The redaction rule: exact secret values masked in texts, blocks, meta and messages."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dsh.tools import ToolArgs, ToolContext, ToolOutput, ToolRegistry
from dsh.tools.base import Tool
from dsh.tools.redaction import MASK, Redaction

SECRET = "sk-redaction-test-0123456789"


def test_every_occurrence_is_masked_and_short_values_are_ignored() -> None:
    r = Redaction((SECRET, "short", SECRET))
    assert r.values == (SECRET,)
    assert r.text(f"a {SECRET} b {SECRET}") == f"a {MASK} b {MASK}"
    assert SECRET not in repr(r) and "1 secret values" in repr(r)
    assert not Redaction(("tiny",))


def test_a_tool_result_and_its_meta_are_scrubbed_by_the_registry(tmp_path: Path) -> None:
    class Leak(Tool[ToolArgs]):
        name = "leak"
        description = "Leak the key."
        args_model = ToolArgs

        async def call(self, args: ToolArgs, ctx: ToolContext) -> ToolOutput:
            return ToolOutput.text(f"key={SECRET}", meta={"lines": [{"text": SECRET}], SECRET: 1})

    registry = ToolRegistry([Leak()])
    ctx = ToolContext(session_id="s", call_id="c", cwd=tmp_path, redaction=Redaction((SECRET,)))
    out = asyncio.run(registry.call("leak", "{}", ctx))
    assert out.content[0]["text"] == f"key={MASK}"
    assert out.meta == {"lines": [{"text": MASK}], MASK: 1}
    plain = asyncio.run(registry.call("leak", "{}", ToolContext(session_id="s", call_id="c", cwd=tmp_path)))
    assert SECRET in plain.content[0]["text"]  # no redaction given: nothing masked

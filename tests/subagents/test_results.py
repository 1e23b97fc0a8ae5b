"""What a delegation returns to the parent: the child's answer, or the original's error texts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.events import chunks as ck
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, error_reply, text_reply, tool_call_reply
from dsh.store.memory import MemoryEventStore
from dsh.subagents import standard_tools
from dsh.subagents.tools import non_completion_text


def _max_tokens_reply(text: str) -> list[Any]:
    return [c for c in text_reply(text) if c.get("type") != "finish"] + [ck.finish("max-tokens")]


def _spawn(prompt: str = "Do it.") -> list[Any]:
    return tool_call_reply("call_sub", "subagent", {"description": "child task", "prompt": prompt})


async def _parent_result(tmp_path: Path, child_scripts: list[list[Any]]) -> dict[str, Any]:
    scripts = [_spawn(), *child_scripts, text_reply("PARENT_DONE")]
    agent = await Agent.create(
        MemoryEventStore(),
        model=ScriptedModel(scripts),
        tools=standard_tools(spill_dir=tmp_path / "spill"),
        config=AgentConfig(model="m", retry=NO_DELAY),
        cwd=tmp_path,
    )
    assert (await agent.run_turn("delegate")).ok
    (result,) = [e for e in agent.session.events if e.type == "tool/result"]
    return dict(result.data)


def _text(data: dict[str, Any]) -> tuple[str, bool]:
    block = data["message"]["content"][0]
    return str(block["content"][0]["text"]), bool(block["isError"])


async def test_success_is_the_childs_last_answer(tmp_path: Path) -> None:
    data = await _parent_result(tmp_path, [text_reply("CHILD_OK")])
    assert _text(data) == ("CHILD_OK", False)


async def test_a_child_that_hit_its_token_limit_is_an_error_with_its_partial_output(tmp_path: Path) -> None:
    data = await _parent_result(tmp_path, [_max_tokens_reply("partial one")])
    assert _text(data) == (
        "Error: subagent run hit its token limit before finishing\n"
        "Partial output before the run ended:\npartial one",
        True,
    )
    assert "error" not in data, "the original's subagent headlines carry no data.error"


async def test_a_failed_child(tmp_path: Path) -> None:
    data = await _parent_result(tmp_path, [error_reply("BAD_REQUEST", "the provider refused")])
    assert _text(data) == ("Error: subagent run failed", True)
    assert "error" not in data


@pytest.mark.parametrize(
    ("kind", "partial", "expected"),
    [
        ("aborted", "", "subagent run was cancelled"),
        ("aborted", "half", "subagent run was cancelled\nPartial output before the run ended:\nhalf"),
        ("error", "so far", "subagent run failed\nPartial output before the run ended:\nso far"),
        ("max-tokens", "", "subagent run hit its token limit before finishing"),
        ("refused", "", "subagent run ended abnormally (refused)"),
    ],
)
def test_non_completion_texts(kind: str, partial: str, expected: str) -> None:
    assert non_completion_text(kind, partial) == expected


async def test_the_recorded_foreground_results(upstream: Path) -> None:
    for scenario, text in [
        ("subagent-spawn-in-process", "CHILD_OK"),
        ("subagent-fork-in-process", "MARMALADE"),
    ]:
        events = [
            json.loads(line) for line in (upstream / scenario / "session.jsonl").read_text().splitlines()
        ]
        (result,) = [e for e in events if e["type"] == "tool/result"]
        assert _text(result["data"]) == (text, False)
        assert "error" not in result["data"]


def test_schemas_have_the_originals_shape(upstream: Path) -> None:
    recorded = json.loads((upstream / "text-turn" / "tool-schemas.expected.json").read_text())["initial"]
    original = {t["name"]: t["parameters"] for t in recorded}
    ours = {s["name"]: s["parameters"] for s in standard_tools().specs()}
    for name in ["subagent", "subagent_fork"]:
        theirs, mine = original[name], ours[name]
        assert list(mine) == list(theirs) == ["type", "properties", "required"]
        assert mine["required"] == theirs["required"]
        assert {k: v["type"] for k, v in mine["properties"].items()} == {
            k: v["type"] for k, v in theirs["properties"].items()
        }
        assert mine["properties"] != theirs["properties"], "descriptions are our own"

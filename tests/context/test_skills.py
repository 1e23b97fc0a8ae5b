"""Skills: discovery in the original's roots (and .claude/skills), the catalog, the skill tool;
a malformed SKILL.md is skipped with one warning line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dsh.context import WorkspaceConfig
from dsh.context.skills import discover
from dsh.model.scripted import text_reply, tool_call_reply
from tests.context.helpers import context_agent, injected, text


def skill(root: Path, folder: str, body: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def good(name: str, description: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\nDo {name} things.\n"


async def test_catalog_lists_model_invocable_skills_and_the_tool_loads_one(tmp_path: Path) -> None:
    skills = tmp_path / ".dsh" / "skills"
    skill(skills, "b-skill", good("b-skill", "Second <one> & more."))
    skill(skills, "a-skill", good("a-skill", "First   one\n  wrapped.", "user-invocable: false\n"))
    skill(skills, "hidden", good("hidden-skill", "Never listed.", "disable-model-invocation: true\n"))
    skill(tmp_path / ".claude" / "skills", "claude-skill", good("claude-skill", "From Claude Code's place."))
    replies = [
        tool_call_reply("c1", "skill", {"name": "a-skill"}),
        tool_call_reply("c2", "skill", {"name": "hidden-skill"}),
        tool_call_reply("c3", "skill", {"name": "Bad Name"}),
        tool_call_reply("c4", "skill", {"name": "nope"}),
        text_reply("done"),
    ]
    agent, _ = await context_agent(tmp_path, replies)
    agent = agent
    await agent.run_turn("go")
    [catalog] = injected(agent.session.events, "skill-catalog")
    body = text(catalog)[0]
    assert "- `a-skill`: First one wrapped.\n- `b-skill`: Second &lt;one&gt; &amp; more.\n" in body
    assert "hidden-skill" not in body
    assert "claude-skill" not in body  # WorkspaceConfig.inside reads only the original's places
    assert catalog["source"]["entries"][1] == {"name": "b-skill", "description": "Second <one> & more."}
    results = [
        e.data["message"]["content"][0]["content"][0]["text"]
        for e in agent.session.events
        if e.type == "tool/result"
    ]
    assert results[0].startswith(
        '<skill_content name="a-skill">\n<skill_resources>\nBase directory for this skill: '
    )
    assert results[0].endswith(
        "<skill_instructions>\nDo a-skill things.\n</skill_instructions>\n</skill_content>"
    )
    assert results[1:] == [
        'Error: skill "hidden-skill" is not available for model invocation',
        'Error: invalid skill name "Bad Name"',
        'Error: skill "nope" is unknown or no longer available',
    ]
    assert len(injected(agent.session.events, "skill-catalog")) == 1  # unchanged: not re-sent


def test_claude_code_skills_and_the_rank_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    skill(work / ".claude" / "skills", "x", good("shared", "Project Claude copy."))
    skill(home / ".claude" / "skills", "y", good("shared", "User Claude copy."))
    skill(home / ".claude" / "skills", "z", good("only-home", "User only."))
    skill(work / ".dsh" / "skills", "w", good("first", "Ranked first."))
    config = WorkspaceConfig.from_env({"HOME": str(home)})
    found = discover(work, config)
    assert found["shared"].description == "Project Claude copy."
    assert set(found) == {"shared", "only-home", "first"}


def test_a_malformed_skill_is_skipped_with_one_warning_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    skills = tmp_path / ".dsh" / "skills"
    skill(skills, "ok", good("ok-skill", "Fine."))
    bad = skill(skills, "bad", "---\nname: bad-skill\ndescription: 'unterminated\n---\nbody\n")
    skill(skills, "nofront", "no front matter at all\n")
    with caplog.at_level(logging.WARNING, logger="dsh.skills"):
        for _ in range(3):  # every pre-step discovers again; the warning is given once
            assert set(discover(tmp_path, WorkspaceConfig.inside())) == {"ok-skill"}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert any(str(bad) in line and "unterminated" in line for line in lines)
    assert all("\n" not in line for line in lines)


async def test_no_skills_no_catalog(tmp_path: Path) -> None:
    agent, _ = await context_agent(tmp_path, [text_reply("ok")])
    await agent.run_turn("hi")
    assert injected(agent.session.events, "skill-catalog") == []

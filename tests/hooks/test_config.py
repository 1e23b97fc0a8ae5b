"""Hook files: both shapes, per-dialect fields, matchers, and the drop-whole-file rule."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from dsh.errors import UsageError
from dsh.hooks import load_hook_file, parse_hooks
from dsh.hooks.config import DEFAULT_TIMEOUT_MS, compile_matcher


def _cmd(text: str, **extra: object) -> dict[str, object]:
    return {"type": "command", "command": text, **extra}


def test_wrapped_and_bare_maps_read_the_same() -> None:
    groups = [{"matcher": "bash", "hooks": [_cmd("true")]}]
    wrapped = parse_hooks({"hooks": {"PreToolUse": groups}}, "claude-code")
    bare = parse_hooks({"PreToolUse": groups}, "claude-code")
    assert wrapped.events == bare.events
    (group,) = wrapped.groups("PreToolUse")
    assert group.matcher.source == "bash" and [c.command for c in group.commands] == ["true"]
    assert group.commands[0].timeout_ms == DEFAULT_TIMEOUT_MS == 600_000


def test_timeouts_are_seconds_clamped_to_ten_minutes() -> None:
    doc = {"Stop": [{"hooks": [_cmd("a", timeout=2.5), _cmd("b", timeout=10_000), _cmd("c", timeoutSec=3)]}]}
    claude = parse_hooks(doc, "claude-code").groups("Stop")[0].commands
    assert [c.timeout_ms for c in claude] == [2500, 600_000, 600_000]  # Claude ignores timeoutSec
    codex = parse_hooks(doc, "codex").groups("Stop")[0].commands
    assert [c.timeout_ms for c in codex] == [2500, 600_000, 3000]


def test_skipped_entries_empty_groups_and_unknown_events() -> None:
    doc = {
        "PreToolUse": [
            {"hooks": [{"type": "prompt", "prompt": "x"}]},  # not a command: skipped, group dropped
            {"hooks": [_cmd("later", **{"async": True}), _cmd("now")]},
        ],
        "Notification": [{"hooks": [_cmd("x")]}],  # not an event of the dialect: ignored
        "SubagentStop": [{"hooks": [_cmd("x")]}],
    }
    claude = parse_hooks(doc, "claude-code")
    assert [[c.command for c in g.commands] for g in claude.groups("PreToolUse")] == [["later", "now"]]
    assert set(claude.events) == {"PreToolUse", "SubagentStop"}
    codex = parse_hooks(doc, "codex")
    assert [[c.command for c in g.commands] for g in codex.groups("PreToolUse")] == [["now"]]  # async skipped
    assert set(codex.events) == {"PreToolUse"}


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"hooks": []},
        {"Stop": {}},
        {"Stop": ["x"]},
        {"Stop": [{"hooks": "x"}]},
        {"Stop": [{"hooks": [{"command": ""}]}]},
        {"Stop": [{"hooks": [{"command": "x", "timeout": "5"}]}]},
        {"Stop": [{"hooks": [{"command": "x", "timeout": 0}]}]},
        {"PreToolUse": [{"matcher": 3, "hooks": [_cmd("x")]}]},
        {"PreToolUse": [{"matcher": "[", "hooks": [_cmd("x")]}]},
        {"PostToolUse": [{"matcher": "(", "hooks": [_cmd("x")]}]},
    ],
)
def test_malformed_documents_are_refused(doc: object) -> None:
    with pytest.raises(UsageError):
        parse_hooks(doc, "claude-code")


def test_an_invalid_matcher_is_harmless_where_matchers_are_ignored() -> None:
    doc = {
        "UserPromptSubmit": [{"matcher": "[", "hooks": [_cmd("x")]}],
        "Stop": [{"matcher": "[", "hooks": [_cmd("y")]}],
    }
    for dialect in ("claude-code", "codex"):
        parsed = parse_hooks(doc, dialect)
        assert set(parsed.events) == {"UserPromptSubmit", "Stop"}


def test_claude_matchers() -> None:
    exact = compile_matcher("Bash|Read", "claude-code")
    assert exact.matches("Bash") and exact.matches("Read") and not exact.matches("Bashful")
    regex = compile_matcher("^mcp__.*", "claude-code")
    assert regex.matches("mcp__github__search") and not regex.matches("bash")
    unanchored = compile_matcher("a.h", "claude-code")
    assert unanchored.matches("bash")
    for everything in (None, "", "*"):
        assert compile_matcher(everything, "claude-code").matches("anything")


def test_codex_matchers_are_always_regexes() -> None:
    assert compile_matcher("bash", "codex").matches("mybash_tool")
    assert not compile_matcher("bash", "claude-code").matches("mybash_tool")


def test_files_load_missing_silently_and_invalid_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="dsh.hooks"):
        assert load_hook_file(tmp_path / "hooks.json", "claude-code") is None
        assert caplog.records == []
        (tmp_path / "hooks.json").write_text("{not json")
        assert load_hook_file(tmp_path / "hooks.json", "claude-code") is None
        (tmp_path / "codex-hooks.json").write_text(
            json.dumps({"PreToolUse": [{"matcher": "[", "hooks": []}]})
        )
        assert load_hook_file(tmp_path / "codex-hooks.json", "codex") is None
    first, second = (r.getMessage() for r in caplog.records)
    assert f"{tmp_path / 'hooks.json'}" in first and "not valid JSON" in first
    assert "codex-hooks.json" in second and "matcher '['" in second
    assert all("none of its hooks will run" in r.getMessage() for r in caplog.records)
    (tmp_path / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [_cmd("true")]}]}}))
    loaded = load_hook_file(tmp_path / "hooks.json", "claude-code")
    assert (
        loaded is not None and loaded.dialect == "claude-code" and loaded.path == str(tmp_path / "hooks.json")
    )

"""The read, write and edit tools, against real files in a temporary workspace."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from dsh.tools import ToolContext, ToolRegistry, builtin_registry

from .conftest import make_ctx, text_of


def _args(**kwargs: object) -> str:
    return json.dumps(kwargs)


async def _ok(registry: ToolRegistry, ctx: ToolContext, name: str, **kwargs: object) -> str:
    output = await registry.call(name, _args(**kwargs), ctx)
    assert not output.is_error, text_of(output)
    return text_of(output)


async def _err(registry: ToolRegistry, ctx: ToolContext, name: str, code: str, **kwargs: object) -> str:
    output = await registry.call(name, _args(**kwargs), ctx)
    assert output.is_error, text_of(output)
    assert output.code == code, text_of(output)
    assert text_of(output).startswith("Error: ")
    return text_of(output)


def _recorded(log: Path) -> list[tuple[dict[str, object], dict[str, object]]]:
    """(tool/call data, tool/result data) pairs of a recorded log."""
    events = [json.loads(line) for line in log.read_text().splitlines()]
    calls = {e["data"]["callId"]: e["data"] for e in events if e["type"] == "tool/call"}
    pairs = []
    for event in events:
        if event["type"] == "tool/result":
            block = event["data"]["message"]["content"][0]
            pairs.append((calls[block["toolCallId"]], event["data"]))
    return pairs


# -- read ------------------------------------------------------------------------------


async def test_read_has_the_originals_shape(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("alpha\nbeta\r\ngamma")
    text = await _ok(registry, ctx, "read", file_path="notes.txt")
    assert text == (
        f"<path>{workspace}/notes.txt</path>\n<type>file</type>\n<content>\n"
        "1: alpha\n2: beta\n3: gamma\n\n(End of file - total 3 lines)\n</content>"
    )


async def test_read_replays_the_recorded_fs_read(
    upstream: Path, tmp_path: Path, registry: ToolRegistry
) -> None:
    shutil.copytree(upstream / "fs-read" / "workspace", tmp_path, dirs_exist_ok=True)
    ((call, result),) = _recorded(upstream / "fs-read" / "session.jsonl")
    output = await registry.call(str(call["name"]), str(call["arguments"]), make_ctx(tmp_path))
    recorded = result["message"]["content"][0]  # type: ignore[index]
    assert text_of(output).replace(str(tmp_path), "{{cwd}}") == recorded["content"][0]["text"]
    assert output.is_error is recorded["isError"]
    assert output.meta is not None
    assert json.loads(json.dumps(output.meta).replace(str(tmp_path), "{{cwd}}")) == result["meta"]


async def test_read_pages_with_offset_and_limit(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    text = await _ok(registry, ctx, "read", file_path="big.txt", offset=10, limit=3)
    body = text.split("<content>\n")[1]
    assert body == (
        "10: line 10\n11: line 11\n12: line 12\n\n"
        "(Showing lines 10-12 of 100. Use offset=13 to continue.)\n</content>"
    )
    tail = await _ok(registry, ctx, "read", file_path="big.txt", offset=99)
    assert tail.endswith("99: line 99\n100: line 100\n\n(End of file - total 100 lines)\n</content>")


async def test_read_default_limit_and_large_files(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "huge.txt").write_text("x\n" * 50_000)
    text = await _ok(registry, ctx, "read", file_path="huge.txt")
    assert "\n2000: x\n\n(Showing lines 1-2000 of 50000. Use offset=2001 to continue.)" in text


async def test_read_caps_output_and_long_lines(workspace: Path, ctx: ToolContext) -> None:
    registry = builtin_registry(read_max_output_bytes=1_000)
    (workspace / "wide.txt").write_text("y" * 5_000 + "\n" + "short\n" * 500)
    text = await _ok(registry, ctx, "read", file_path="wide.txt")
    assert "1: " + "y" * 2000 + "… [line cut: 5000 characters]\n" in text
    assert "(Output capped at 1000 bytes. Showing lines 1-1 of 501. Use offset=2 to continue.)" in text
    second = await _ok(registry, ctx, "read", file_path="wide.txt", offset=2)
    assert len(second) < 1_300
    assert "Output capped" in second


async def test_read_empty_file(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "empty.txt").write_text("")
    text = await _ok(registry, ctx, "read", file_path="empty.txt")
    assert text.endswith("<content>\n(End of file - total 0 lines)\n</content>")


async def test_read_errors(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "nul.bin").write_bytes(b"abc\x00def")
    (workspace / "latin.txt").write_bytes(b"ok\ncaf\xe9\n")
    (workspace / "three.txt").write_text("a\nb\nc\n")
    missing = await _err(registry, ctx, "read", "NOT_FOUND", file_path="missing.txt")
    assert missing == f"Error: file not found: {workspace}/missing.txt"
    assert "is a directory" in await _err(registry, ctx, "read", "IS_DIRECTORY", file_path="sub")
    assert "NUL bytes" in await _err(registry, ctx, "read", "BINARY_FILE", file_path="nul.bin")
    assert "invalid UTF-8 on line 2" in await _err(
        registry, ctx, "read", "BINARY_FILE", file_path="latin.txt"
    )
    past = await _err(registry, ctx, "read", "OFFSET_OUT_OF_RANGE", file_path="three.txt", offset=9)
    assert past == f"Error: offset 9 is past the end of {workspace}/three.txt (3 lines)"
    assert "must not be empty" in await _err(registry, ctx, "read", "INVALID_ARGUMENTS", file_path=" ")


async def test_read_refuses_fifos(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    await _err(registry, ctx, "read", "NOT_A_FILE", file_path="pipe")


# -- write -----------------------------------------------------------------------------


async def test_write_creates_parents_and_reports(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    text = await _ok(registry, ctx, "write", file_path="a/b/c.txt", content="one\ntwo\n")
    assert text == (
        f"<path>{workspace}/a/b/c.txt</path>\n<type>file</type>\n<content>\n"
        "Created file: wrote 8 bytes, 2 lines\n</content>"
    )
    assert (workspace / "a/b/c.txt").read_text() == "one\ntwo\n"


async def test_write_overwrites_atomically_keeping_the_mode(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "run.sh"
    target.write_text("old")
    target.chmod(0o750)
    text = await _ok(registry, ctx, "write", file_path=str(target), content="é")
    assert "Overwrote file: wrote 2 bytes, 1 line" in text
    assert target.read_bytes() == "é".encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert sorted(p.name for p in workspace.iterdir()) == ["run.sh"]


async def test_write_empty_content_and_errors(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    assert "wrote 0 bytes, 0 lines" in await _ok(registry, ctx, "write", file_path="e.txt", content="")
    (workspace / "dir").mkdir()
    await _err(registry, ctx, "write", "IS_DIRECTORY", file_path="dir", content="x")
    (workspace / "file").write_text("x")
    assert "cannot create the directory" in await _err(
        registry, ctx, "write", "IO_ERROR", file_path="file/inner.txt", content="x"
    )


async def test_write_replays_the_recorded_fs_write(
    upstream: Path, tmp_path: Path, registry: ToolRegistry
) -> None:
    ((call, _result),) = _recorded(upstream / "fs-write" / "session.jsonl")
    output = await registry.call(str(call["name"]), str(call["arguments"]), make_ctx(tmp_path))
    assert not output.is_error
    assert (tmp_path / "notes.txt").read_text() == "hello world"


async def test_write_through_an_inside_symlink_writes_the_target(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "real.txt").write_text("old")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    await _ok(registry, ctx, "write", file_path="alias.txt", content="new")
    assert (workspace / "alias.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "new"


# -- edit ------------------------------------------------------------------------------


async def test_edit_replaces_one_occurrence(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "code.py").write_text("def f():\n    return 1\n")
    text = await _ok(registry, ctx, "edit", file_path="code.py", old_string="return 1", new_string="return 2")
    assert text.endswith("<content>\nEdited file: replaced 1 occurrence\n</content>")
    assert (workspace / "code.py").read_text() == "def f():\n    return 2\n"


async def test_edit_replace_all_and_ambiguity(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "t.txt").write_text("a-a-a")
    ambiguous = await _err(
        registry, ctx, "edit", "AMBIGUOUS_MATCH", file_path="t.txt", old_string="a", new_string="b"
    )
    assert "occurs 3 times" in ambiguous
    assert (workspace / "t.txt").read_text() == "a-a-a"
    text = await _ok(
        registry, ctx, "edit", file_path="t.txt", old_string="a", new_string="", replace_all=True
    )
    assert "replaced 3 occurrences" in text
    assert (workspace / "t.txt").read_text() == "--"


async def test_edit_errors(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "t.txt").write_text("hello")
    assert "not found in" in await _err(
        registry, ctx, "edit", "NO_MATCH", file_path="t.txt", old_string="bye", new_string="x"
    )
    assert "identical" in await _err(
        registry, ctx, "edit", "NO_CHANGE", file_path="t.txt", old_string="hello", new_string="hello"
    )
    await _err(registry, ctx, "edit", "INVALID_ARGUMENTS", file_path="t.txt", old_string="", new_string="x")
    await _err(registry, ctx, "edit", "NOT_FOUND", file_path="nope.txt", old_string="a", new_string="b")
    (workspace / "bin").write_bytes(b"\x00\x01")
    await _err(registry, ctx, "edit", "BINARY_FILE", file_path="bin", old_string="a", new_string="b")
    assert (workspace / "t.txt").read_text() == "hello"


async def test_edit_matches_lf_text_in_a_crlf_file(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await _ok(registry, ctx, "edit", file_path="w.txt", old_string="one\ntwo", new_string="1\n2")
    assert (workspace / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


# -- confinement -----------------------------------------------------------------------


def _escapes(workspace: Path) -> dict[str, str]:
    outside = workspace.parent / "outside"
    (workspace / "link").symlink_to(outside)
    (workspace / "link-file").symlink_to(outside / "secret.txt")
    return {
        "dotdot": "../outside/secret.txt",
        "absolute": str(outside / "secret.txt"),
        "symlinked-dir": "link/secret.txt",
        "symlinked-file": "link-file",
    }


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlinked-dir", "symlinked-file"])
@pytest.mark.parametrize("tool", ["read", "write", "edit"])
async def test_paths_outside_the_workspace_are_refused(
    tool: str, how: str, registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    path = _escapes(workspace)[how]
    args: dict[str, object] = {"file_path": path}
    if tool == "write":
        args["content"] = "pwned"
    if tool == "edit":
        args.update(old_string="secret", new_string="pwned")
    text = await _err(registry, ctx, tool, "OUTSIDE_WORKSPACE", **args)
    assert f"outside the workspace {workspace}" in text
    assert ("symlink" in text) is how.startswith("symlinked")
    assert (workspace.parent / "outside" / "secret.txt").read_text() == "top secret\n"


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlinked-dir", "symlinked-file"])
async def test_outside_paths_are_allowed_with_the_flag(
    how: str, registry: ToolRegistry, workspace: Path
) -> None:
    ctx = make_ctx(workspace, allow_outside=True)
    path = _escapes(workspace)[how]
    assert "1: top secret" in await _ok(registry, ctx, "read", file_path=path)
    await _ok(registry, ctx, "edit", file_path=path, old_string="top", new_string="no")
    assert (workspace.parent / "outside" / "secret.txt").read_text() == "no secret\n"


async def test_dotdot_that_stays_inside_is_fine(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "d").mkdir()
    (workspace / "x.txt").write_text("x\n")
    assert "1: x" in await _ok(registry, ctx, "read", file_path="d/../x.txt")

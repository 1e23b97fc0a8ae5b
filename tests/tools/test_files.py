"""The read, write and edit tools, against real files in a temporary workspace."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from dsh.tools import ToolContext, ToolRegistry, builtin_registry
from dsh.tools.builtin import ReadTool, WriteTool
from dsh.tools.observations import ABSENT, Present

from .conftest import make_ctx, text_of


def _args(**kwargs: object) -> str:
    return json.dumps(kwargs)


async def _ok(registry: ToolRegistry, ctx: ToolContext, name: str, **kwargs: object) -> str:
    output = await registry.call(name, _args(**kwargs), ctx)
    assert not output.is_error, text_of(output)
    return text_of(output)


async def _err(
    registry: ToolRegistry, ctx: ToolContext, name: str, code: str | None, **kwargs: object
) -> str:
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


@pytest.mark.parametrize("scenario", ["fs-read", "fs-read-window"])
async def test_read_replays_the_recorded_text_and_meta(
    scenario: str, upstream: Path, tmp_path: Path, registry: ToolRegistry
) -> None:
    shutil.copytree(upstream / scenario / "workspace", tmp_path, dirs_exist_ok=True)
    ((call, result),) = _recorded(upstream / scenario / "session.jsonl")
    output = await registry.call(str(call["name"]), str(call["arguments"]), make_ctx(tmp_path))
    recorded = result["message"]["content"][0]  # type: ignore[index]
    assert text_of(output).replace(str(tmp_path), "{{cwd}}") == recorded["content"][0]["text"]
    assert output.is_error is recorded["isError"]
    assert output.meta is not None
    assert json.loads(json.dumps(output.meta).replace(str(tmp_path), "{{cwd}}")) == result["meta"]


async def test_the_recorded_read_texts(upstream: Path) -> None:
    texts = {
        str(result["message"]["content"][0]["content"][0]["text"])  # type: ignore[index]
        for scenario in ["fs-read", "fs-read-window", "fs-delete-recreate", "fs-write-overwrite"]
        for _call, result in _recorded(upstream / scenario / "session.jsonl")
    }
    assert (
        "<path>{{cwd}}/greeting.txt</path>\n<type>file</type>\n<content>\n1: hello\n\n"
        "(End of file - total 1 lines)\n</content>"
    ) in texts
    assert (
        "<path>{{cwd}}/data.txt</path>\n<type>file</type>\n<content>\n1: original contents\n\n"
        "(End of file - total 1 lines)\n</content>" in texts
    )
    assert (
        "<path>{{cwd}}/big.txt</path>\n<type>file</type>\n<content>\n5: line five\n6: line six\n"
        "7: line seven\n8: line eight\n\n(Showing lines 5-8 of 10. Use offset=9 to continue.)\n</content>"
    ) in texts
    assert 'Error: cannot read "{{cwd}}/deleted.txt": not found' in texts


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
    exact = await _ok(registry, ctx, "read", file_path="big.txt", offset=98, limit=3)
    assert exact.endswith("100: line 100\n\n(End of file - total 100 lines)\n</content>")


async def test_read_default_limit_and_large_files(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "huge.txt").write_text("x\n" * 50_000)
    text = await _ok(registry, ctx, "read", file_path="huge.txt")
    assert "\n2000: x\n\n(Showing lines 1-2000 of 50000. Use offset=2001 to continue.)" in text


async def test_read_caps_long_lines(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "wide.txt").write_text("y" * 5_000 + "\nshort\n" + "😀" * 2001 + "\n")
    text = await _ok(registry, ctx, "read", file_path="wide.txt")
    assert "\n1: " + "y" * 2000 + "... (line truncated to 2000 chars)\n2: short\n" in text
    assert "\n3: " + "😀" * 1000 + "... (line truncated to 2000 chars)\n" in text, "chars count UTF-16 units"


async def test_read_caps_the_selected_bytes(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    lines = ["z" * 1000 for _ in range(100)]
    (workspace / "wide.txt").write_text("\n".join(lines))
    used, last = -1, 0
    for number, line in enumerate(lines, 1):
        size = len(f"{number}: {line}".encode()) + 1
        if used + size > 51_200:
            break
        used, last = used + size, number
    text = await _ok(registry, ctx, "read", file_path="wide.txt")
    assert text.endswith(
        f"\n{last}: {'z' * 1000}\n\n(Output capped. Showing lines 1-{last}. "
        f"Use offset={last + 1} to continue.)\n</content>"
    )
    assert f"\n{last + 1}: " not in text


async def test_read_empty_file(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "empty.txt").write_text("")
    text = await _ok(registry, ctx, "read", file_path="empty.txt")
    assert text.endswith("<content>\n(End of file - total 0 lines)\n</content>")


async def test_read_meta_names_the_language(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "code.py").write_text("x = 1\n")
    output = await registry.call("read", '{"file_path": "code.py"}', ctx)
    assert output.meta == {
        "path": f"{workspace}/code.py",
        "offset": 1,
        "lines": [{"number": 1, "text": "x = 1"}],
        "totalLines": 1,
        "lang": "python",
    }


async def test_read_errors(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "nul.bin").write_bytes(b"abc\x00def")
    (workspace / "latin.txt").write_bytes(b"ok\ncaf\xe9\n")
    (workspace / "three.txt").write_text("a\nb\nc\n")
    d = str(workspace)
    cases = [
        ({"file_path": "missing.txt"}, f'Error: cannot read "{d}/missing.txt": not found', "FS_NOT_FOUND"),
        ({"file_path": "sub"}, f'Error: cannot read "{d}/sub": not a regular file', "FS_NOT_REGULAR_FILE"),
        ({"file_path": "nul.bin"}, f'Error: cannot read "{d}/nul.bin": binary file', "FS_NOT_TEXT"),
        (
            {"file_path": "latin.txt"},
            f'Error: cannot read "{d}/latin.txt": invalid UTF-8 text',
            "FS_NOT_TEXT",
        ),
        (
            {"file_path": "three.txt", "offset": 9},
            f'Error: offset 9 is out of range for "{d}/three.txt" (3 lines)',
            "FS_NOT_FOUND",
        ),
        (
            {"file_path": "three.txt/x"},
            f'Error: cannot resolve "{d}/three.txt/x": a parent path segment is not a directory',
            "FS_NOT_FOUND",
        ),
        ({"file_path": " "}, "Error: file_path must be a non-empty string", None),
        ({"file_path": "three.txt", "offset": 0}, "Error: offset must be a positive integer", None),
        ({"file_path": "three.txt", "offset": 2.5}, "Error: offset must be a positive integer", None),
        ({"file_path": "three.txt", "limit": -1}, "Error: limit must be a positive integer", None),
        ({"file_path": "three.txt", "limit": 2001}, "Error: limit must be less than or equal to 2000", None),
    ]
    for args, text, code in cases:
        output = await registry.call("read", json.dumps(args), ctx)
        assert (output.is_error, text_of(output), output.code) == (True, text, code), args
    empty = workspace / "empty.txt"
    empty.write_text("")
    assert "(End of file - total 0 lines)" in await _ok(
        registry, ctx, "read", file_path="empty.txt", offset=1
    )


async def test_read_refuses_fifos(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    await _err(registry, ctx, "read", "FS_NOT_REGULAR_FILE", file_path="pipe")


async def test_reads_are_observed(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "seen.txt").write_text("x")
    await _ok(registry, ctx, "read", file_path="seen.txt")
    await _err(registry, ctx, "read", "FS_NOT_FOUND", file_path="gone.txt")
    real = os.path.realpath(workspace)
    assert isinstance(ctx.files.get(f"{real}/seen.txt"), Present)
    assert ctx.files.get(f"{real}/gone.txt") == ABSENT
    assert ctx.files.get(f"{real}/never.txt") is None


# -- the recorded sessions -------------------------------------------------------------


@pytest.mark.parametrize(
    "scenario", ["fs-read", "fs-read-window", "fs-write", "fs-write-overwrite", "fs-delete-recreate"]
)
async def test_recorded_file_sessions_give_the_recorded_results(
    scenario: str, upstream: Path, tmp_path: Path, registry: ToolRegistry
) -> None:
    """Every call of the recording, in order, in one session: texts, isError, error codes and meta."""
    if (upstream / scenario / "workspace").is_dir():
        shutil.copytree(upstream / scenario / "workspace", tmp_path, dirs_exist_ok=True)
    ctx = make_ctx(tmp_path)
    for call, result in _recorded(upstream / scenario / "session.jsonl"):
        output = await registry.call(str(call["name"]), str(call["arguments"]), ctx)
        block = result["message"]["content"][0]  # type: ignore[index]
        assert text_of(output).replace(str(tmp_path), "{{cwd}}") == block["content"][0]["text"], call
        assert output.is_error is block["isError"]
        assert output.code == (result.get("error") or {}).get("code")  # type: ignore[attr-defined]
        meta = json.loads(json.dumps(output.meta).replace(str(tmp_path), "{{cwd}}"))
        assert meta == result.get("meta"), call


# -- write -----------------------------------------------------------------------------


def _created(workspace: Path, rel: str) -> str:
    return f"<path>{workspace}/{rel}</path>\n<type>file</type>\n<content>\nCreated file\n</content>"


def _updated(workspace: Path, rel: str) -> str:
    return f"<path>{workspace}/{rel}</path>\n<type>file</type>\n<content>\nUpdated file\n</content>"


async def test_write_creates_parents_and_reports(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    output = await registry.call("write", _args(file_path="a/b/c.txt", content="one\ntwo\n"), ctx)
    assert (text_of(output), output.meta) == (_created(workspace, "a/b/c.txt"), {"diffs": []})
    assert (workspace / "a/b/c.txt").read_text() == "one\ntwo\n"
    assert await _ok(registry, ctx, "write", file_path="e.txt", content="") == _created(workspace, "e.txt")
    assert (workspace / "e.txt").read_bytes() == b""


async def test_overwriting_needs_a_read_first(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "run.sh"
    target.write_text("old\n")
    target.chmod(0o750)
    refused = await _err(registry, ctx, "write", "FS_NOT_OBSERVED", file_path="run.sh", content="new")
    assert refused == (
        f'Error: cannot overwrite existing "{target}" without reading it first — read the file, then retry'
    )
    assert target.read_text() == "old\n"
    await _ok(registry, ctx, "read", file_path="run.sh")
    output = await registry.call("write", _args(file_path="run.sh", content="é\n"), ctx)
    assert text_of(output) == _updated(workspace, "run.sh")
    assert output.meta == {"diffs": [{"path": "run.sh", "oldText": "old", "newText": "é"}]}
    assert target.read_bytes() == "é\n".encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert sorted(p.name for p in workspace.iterdir()) == ["run.sh"]
    again = await _ok(registry, ctx, "write", file_path="run.sh", content="third\n")
    assert again == _updated(workspace, "run.sh"), "a write observes the version it wrote"


async def test_write_after_the_file_changed_or_vanished(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "data.txt"
    target.write_text("v1\n")
    await _ok(registry, ctx, "read", file_path="data.txt")
    target.write_text("v2 by someone else\n")
    changed = await _err(registry, ctx, "write", "FS_STALE_VERSION", file_path="data.txt", content="mine")
    assert (
        changed
        == f'Error: cannot write "{target}": file changed since it was read — re-read the file, then retry'
    )
    await _ok(registry, ctx, "read", file_path="data.txt")
    target.unlink()
    gone = await _err(registry, ctx, "write", "FS_STALE_VERSION", file_path="data.txt", content="mine")
    assert gone == f'Error: cannot write "{target}": file no longer exists — re-read the file, then retry'
    assert not target.exists()


async def test_a_file_seen_absent_may_only_be_created(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    await _err(registry, ctx, "read", "FS_NOT_FOUND", file_path="later.txt")
    (workspace / "later.txt").write_text("made by bash\n")
    await _err(registry, ctx, "write", "FS_NOT_OBSERVED", file_path="later.txt", content="x")
    (workspace / "later.txt").unlink()
    assert await _ok(registry, ctx, "write", file_path="later.txt", content="x") == _created(
        workspace, "later.txt"
    )


async def test_write_errors(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "dir").mkdir()
    assert await _err(registry, ctx, "write", "FS_NOT_REGULAR_FILE", file_path="dir", content="x") == (
        f'Error: cannot write "{workspace}/dir": not a regular file'
    )
    (workspace / "file").write_text("x")
    assert await _err(registry, ctx, "write", "FS_NOT_FOUND", file_path="file/inner.txt", content="x") == (
        f'Error: cannot resolve "{workspace}/file/inner.txt": a parent path segment is not a directory'
    )
    assert await _err(registry, ctx, "write", None, file_path="", content="x") == (
        "Error: file_path must be a non-empty string"
    )


async def test_write_diffs_are_unified_hunks_of_lf_text(workspace: Path, tmp_path: Path) -> None:
    registry = builtin_registry(spill_dir=tmp_path / "spill")
    ctx = make_ctx(workspace)
    old = "".join(f"line {i}\r\n" for i in range(1, 21))
    (workspace / "w.txt").write_text(old, newline="")
    await _ok(registry, ctx, "read", file_path="w.txt")
    new = old.replace("line 2\r\n", "line two\r\n").replace("line 18\r\n", "").replace("\r\n", "\n")
    output = await registry.call("write", _args(file_path="w.txt", content=new), ctx)
    assert output.meta == {
        "diffs": [
            {
                "path": "w.txt",
                "oldText": "line 1\nline 2\nline 3\nline 4\nline 5",
                "newText": "line 1\nline two\nline 3\nline 4\nline 5",
            },
            {
                "path": "w.txt",
                "oldText": "line 15\nline 16\nline 17\nline 18\nline 19\nline 20",
                "newText": "line 15\nline 16\nline 17\nline 19\nline 20",
            },
        ]
    }
    (workspace / "empty.txt").write_text("")
    await _ok(registry, ctx, "read", file_path="empty.txt")
    insert = await registry.call("write", _args(file_path="empty.txt", content="a\nb\n"), ctx)
    assert insert.meta == {"diffs": [{"path": "empty.txt", "oldText": None, "newText": "a\nb"}]}


async def test_no_diff_over_the_basis_limit(workspace: Path) -> None:
    registry = ToolRegistry([ReadTool(), WriteTool(diff_basis_max_bytes=64)])
    ctx = make_ctx(workspace)
    (workspace / "big.txt").write_text("x" * 64)
    await _ok(registry, ctx, "read", file_path="big.txt")
    output = await registry.call("write", _args(file_path="big.txt", content="small"), ctx)
    assert output.meta == {"diffs": []}
    output = await registry.call("write", _args(file_path="big.txt", content="y" * 64), ctx)
    assert output.meta == {"diffs": []}
    output = await registry.call("write", _args(file_path="big.txt", content="z"), ctx)
    assert output.meta == {"diffs": []}, "the old file is at the limit"
    output = await registry.call("write", _args(file_path="big.txt", content="w"), ctx)
    assert output.meta == {"diffs": [{"path": "big.txt", "oldText": "z", "newText": "w"}]}


async def test_write_through_an_inside_symlink_writes_the_target(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "real.txt").write_text("old")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    await _ok(registry, ctx, "read", file_path="real.txt")
    await _ok(registry, ctx, "write", file_path="alias.txt", content="new")
    assert (workspace / "alias.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "new"


# -- edit ------------------------------------------------------------------------------


async def test_edit_needs_a_read_and_replaces_one_occurrence(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "config.txt"
    target.write_text("mode=DEBUG\nlevel=info\n")
    unseen = await _err(
        registry,
        ctx,
        "edit",
        "FS_NOT_OBSERVED",
        file_path="config.txt",
        old_string="DEBUG",
        new_string="RELEASE",
    )
    assert unseen == f'Error: edit requires reading "{target}" first — read the file, then retry'
    await _ok(registry, ctx, "read", file_path="config.txt")
    output = await registry.call(
        "edit", _args(file_path="config.txt", old_string="DEBUG", new_string="RELEASE"), ctx
    )
    assert text_of(output) == f"The file {target} has been updated successfully."
    assert output.meta == {
        "path": "config.txt",
        "oldText": "mode=DEBUG\nlevel=info",
        "newText": "mode=RELEASE\nlevel=info",
    }
    assert target.read_text() == "mode=RELEASE\nlevel=info\n"
    second = await _ok(registry, ctx, "edit", file_path="config.txt", old_string="info", new_string="warn")
    assert second == f"The file {target} has been updated successfully.", "an edit observes what it wrote"


async def test_edit_replace_all_and_ambiguity(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "t.txt"
    target.write_text("a-a-a")
    await _ok(registry, ctx, "read", file_path="t.txt")
    ambiguous = await _err(
        registry, ctx, "edit", "FS_AMBIGUOUS_EDIT", file_path="t.txt", old_string="a", new_string="b"
    )
    assert ambiguous == (
        f'Error: old_string matched 3 times in "{target}"; provide a more specific old_string or set '
        "replace_all to true"
    )
    assert target.read_text() == "a-a-a"
    text = await _ok(
        registry, ctx, "edit", file_path="t.txt", old_string="a", new_string="", replace_all=True
    )
    assert text == f"The file {target} has been updated. All occurrences were successfully replaced."
    assert target.read_text() == "--"


async def test_edit_errors(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    target = workspace / "t.txt"
    target.write_text("hello")
    await _ok(registry, ctx, "read", file_path="t.txt")
    assert (
        await _err(
            registry, ctx, "edit", "FS_EDIT_NOT_FOUND", file_path="t.txt", old_string="bye", new_string="x"
        )
        == f'Error: old_string was not found in "{target}"'
    )
    assert (
        await _err(registry, ctx, "edit", None, file_path="t.txt", old_string="hello", new_string="hello")
        == "Error: old_string and new_string must differ"
    )
    assert await _err(registry, ctx, "edit", None, file_path="t.txt", old_string="", new_string="x") == (
        "Error: old_string must be a non-empty string"
    )
    await _err(registry, ctx, "read", "FS_NOT_FOUND", file_path="nope.txt")
    assert (
        await _err(
            registry, ctx, "edit", "FS_NOT_FOUND", file_path="nope.txt", old_string="a", new_string="b"
        )
        == f'Error: cannot edit "{workspace}/nope.txt": not found'
    )
    await _ok(registry, ctx, "write", file_path="bin", content="a\x00b")
    assert (
        await _err(registry, ctx, "edit", "FS_NOT_TEXT", file_path="bin", old_string="a", new_string="b")
        == f'Error: cannot edit "{workspace}/bin": binary file'
    )
    assert target.read_text() == "hello"


async def test_edit_after_the_file_changed_or_vanished(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "t.txt"
    target.write_text("one\n")
    await _ok(registry, ctx, "read", file_path="t.txt")
    target.write_text("one two\n")
    stale = f'Error: cannot edit "{target}": file changed since it was read — re-read the file, then retry'
    assert (
        await _err(
            registry, ctx, "edit", "FS_STALE_VERSION", file_path="t.txt", old_string="one", new_string="1"
        )
        == stale
    )
    await _ok(registry, ctx, "read", file_path="t.txt")
    target.unlink()
    assert (
        await _err(
            registry, ctx, "edit", "FS_STALE_VERSION", file_path="t.txt", old_string="one", new_string="1"
        )
        == stale
    )


async def test_edit_matches_lf_text_in_a_crlf_file(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await _ok(registry, ctx, "read", file_path="w.txt")
    output = await registry.call(
        "edit", _args(file_path="w.txt", old_string="one\ntwo", new_string="1\n2"), ctx
    )
    assert (workspace / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"
    assert output.meta == {"path": "w.txt", "oldText": "one\ntwo\nthree", "newText": "1\n2\nthree"}
    await _ok(registry, ctx, "edit", file_path="w.txt", old_string="2\r\nthree", new_string="3")
    assert (workspace / "w.txt").read_bytes() == b"1\r\n3\r\n"


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
    assert "1: no secret" in await _ok(registry, ctx, "read", file_path=path)
    await _ok(registry, ctx, "write", file_path=path, content="no secret\n")
    assert (workspace.parent / "outside" / "secret.txt").read_text() == "no secret\n"


async def test_dotdot_that_stays_inside_is_fine(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "d").mkdir()
    (workspace / "x.txt").write_text("x\n")
    assert "1: x" in await _ok(registry, ctx, "read", file_path="d/../x.txt")

"""The glob tool: files at any depth, oldest first, relative to the session cwd, never outside."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dsh.replay.upstream import Composition
from dsh.tools import ToolContext, ToolRegistry
from dsh.tools.builtin import GlobTool
from dsh.tools.builtin.glob_tool import compile_glob

from .conftest import make_ctx, text_of

FILES = [
    "b.py",
    "a.py",
    "notes.md",
    "src/pkg/mod.py",
    "src/pkg/data.json",
    "src/z.py",
    ".hidden.py",
    ".git/x.py",
]


@pytest.fixture
def tree(workspace: Path) -> Path:
    """FILES created with mtimes in list order (b.py oldest)."""
    for i, rel in enumerate(FILES):
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
        os.utime(path, ns=(1_700_000_000_000_000_000 + i * 1_000_000_000,) * 2)
    return workspace


async def _glob(registry: ToolRegistry, ctx: ToolContext, **kwargs: object) -> str:
    output = await registry.call("glob", json.dumps(kwargs), ctx)
    assert not output.is_error, text_of(output)
    return text_of(output)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"pattern": "*.py"}, ["b.py", "a.py", "src/pkg/mod.py", "src/z.py", ".hidden.py"]),
        ({"pattern": "**/*.py"}, ["b.py", "a.py", "src/pkg/mod.py", "src/z.py", ".hidden.py"]),
        ({"pattern": "src/*.py"}, ["src/z.py"]),
        ({"pattern": "/src/**"}, ["src/pkg/mod.py", "src/pkg/data.json", "src/z.py"]),
        ({"pattern": "*.{md,json}"}, ["notes.md", "src/pkg/data.json"]),
        ({"pattern": "[ab].py"}, ["b.py", "a.py"]),
        ({"pattern": "?.py"}, ["b.py", "a.py", "src/z.py"]),
        ({"pattern": "*"}, [f for f in FILES if not f.startswith(".git/")]),
        ({"pattern": "*.py", "path": "src"}, ["src/pkg/mod.py", "src/z.py"]),
        ({"pattern": "pkg/*", "path": "src"}, ["src/pkg/mod.py", "src/pkg/data.json"]),
        ({"pattern": "*.py", "path": "src/pkg/../pkg"}, ["src/pkg/mod.py"]),
    ],
)
async def test_files_at_any_depth_oldest_first_relative_to_the_cwd(
    args: dict[str, str], expected: list[str], tree: Path, registry: ToolRegistry, ctx: ToolContext
) -> None:
    output = await registry.call("glob", json.dumps(args), ctx)
    assert text_of(output) == "\n".join(expected)
    assert output.meta == {"shape": "paths", "paths": expected, "truncated": False, "total": len(expected)}


async def test_no_files_found(tree: Path, registry: ToolRegistry, ctx: ToolContext) -> None:
    assert await _glob(registry, ctx, pattern="*.rs") == "No files found"
    assert await _glob(registry, ctx, pattern="src") == "No files found", "directories are not listed"


async def test_over_the_cap_keeps_the_oldest_with_the_originals_footer(tree: Path, ctx: ToolContext) -> None:
    tool = GlobTool(max_results=2, sample_over_cap=False)
    output = await ToolRegistry([tool]).call("glob", '{"pattern": "*"}', ctx)
    assert text_of(output) == (
        "b.py\na.py\n\n(Showing 2 of 7 paths. The complete result could not be saved; narrow pattern or "
        "path to see more.)"
    )
    assert output.meta == {"shape": "paths", "paths": ["b.py", "a.py"], "truncated": True, "total": 7}


async def test_the_default_cap_is_100(workspace: Path, ctx: ToolContext) -> None:
    for i in range(150):
        (workspace / f"f{i:03}.txt").write_text("")
    text = text_of(await ToolRegistry([GlobTool()]).call("glob", '{"pattern": "*.txt"}', ctx))
    assert len(text.split("\n\n")[0].splitlines()) == 100
    assert text.endswith(
        "\n\n(Showing 100 of 150 paths. The complete result could not be saved; narrow pattern or path "
        "to see more.)"
    )


@pytest.mark.parametrize(
    ("args", "text", "code"),
    [
        ({"pattern": " "}, "Error: pattern must be a non-empty string", None),
        ({"pattern": "*", "path": ""}, "Error: path must be a non-empty string when given", None),
        (
            {"pattern": "*", "path": "notes.md"},
            'Error: cannot search "{ws}/notes.md": not a directory',
            "FS_NOT_FOUND",
        ),
        (
            {"pattern": "*", "path": "missing"},
            'Error: cannot search "{ws}/missing": not found',
            "FS_NOT_FOUND",
        ),
    ],
)
async def test_glob_errors(
    args: dict[str, str], text: str, code: str | None, tree: Path, registry: ToolRegistry, ctx: ToolContext
) -> None:
    output = await registry.call("glob", json.dumps(args), ctx)
    assert (output.is_error, text_of(output), output.code) == (True, text.format(ws=tree), code)


@pytest.mark.parametrize("path", ["..", "/"])
async def test_glob_never_searches_outside(
    path: str, tree: Path, registry: ToolRegistry, ctx: ToolContext
) -> None:
    output = await registry.call("glob", json.dumps({"pattern": "*", "path": path}), ctx)
    assert (output.is_error, output.code) == (True, "OUTSIDE_WORKSPACE")


async def test_symlinks_are_not_followed(tree: Path, registry: ToolRegistry) -> None:
    (tree / "out").symlink_to(tree.parent / "outside")
    (tree / "inner").symlink_to(tree / "src")
    (tree / "alias.md").symlink_to(tree / "notes.md")
    ctx = make_ctx(tree)
    assert await _glob(registry, ctx, pattern="*.txt") == "No files found"
    assert await _glob(registry, ctx, pattern="*.md") == "notes.md"
    assert "inner/" not in await _glob(registry, ctx, pattern="*")
    allowed = make_ctx(tree, allow_outside=True)
    assert await _glob(registry, allowed, pattern="*.txt") == "No files found", "even when outside is allowed"


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("*.py", ["a.py", "x/y/a.py"], ["a.pyc", "a/py"]),
        ("src/*.py", ["src/a.py"], ["x/src/a.py", "src/x/a.py"]),
        ("src/**", ["src/a", "src/x/y"], ["x/src/a"]),
        ("src/", ["src/a", "x/src/a"], ["src"]),
        ("**/test_*.py", ["test_a.py", "t/test_a.py"], ["t/a_test.py"]),
        ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["a/xb"]),
        ("[!a]*", ["b", "x/b"], ["a", "x/a"]),
        ("*.{js,ts}", ["x.js", "y/x.ts"], ["x.py"]),
        ("\\*", ["*"], ["a"]),
    ],
)
def test_gitignore_style_patterns(pattern: str, matches: list[str], misses: list[str]) -> None:
    regex = compile_glob(pattern)
    assert [m for m in matches if not regex.fullmatch(m)] == []
    assert [m for m in misses if regex.fullmatch(m)] == []


def _sampling_tree(root: Path) -> None:
    """The original's harness preparation, as the replay of ``fs-glob-sampling`` composes it."""
    Composition("fs-glob-sampling", None, None).prepare(root)


async def test_over_the_cap_samples_across_top_level_entries_as_the_original(tmp_path: Path) -> None:
    _sampling_tree(tmp_path)
    ctx = ToolContext(session_id="s", call_id="c", cwd=tmp_path)
    output = await ToolRegistry([GlobTool(max_results=4)]).call(
        "glob", '{"pattern": "*", "path": "tree"}', ctx
    )
    shown = ["tree/archive/a.ts", "tree/docs/guide.md", "tree/src/index.ts", "tree/test/spec.ts"]
    assert text_of(output) == "\n".join(shown) + (
        "\n\n(Showing 4 of 8 paths, sampled across 4 of the 6 top-level entries this pattern matched instead "
        "of taken in modification-time order. Narrow path to inspect a specific subtree. The complete result "
        "could not be saved; narrow pattern or path to see more.)"
    )
    assert output.meta == {"shape": "paths", "paths": shown, "truncated": True, "total": 8}
    seven = await ToolRegistry([GlobTool(max_results=7)]).call(
        "glob", '{"pattern": "*", "path": "tree"}', ctx
    )
    lines = text_of(seven).split("\n\n")
    assert lines[0].splitlines() == [
        "tree/archive/a.ts", "tree/archive/b.ts", "tree/docs/guide.md", "tree/src/index.ts",
        "tree/test/spec.ts", "tree/top.txt", "tree/notes.md",
    ]  # fmt: skip
    assert lines[1].startswith(
        "(Showing 7 of 8 paths, sampled across 6 of the 6 top-level entries this pattern "
    )
    assert "Narrow path" not in lines[1]


async def test_when_every_path_is_its_own_entry_the_sample_is_the_oldest(tmp_path: Path) -> None:
    for i, name in enumerate(["c.md", "a.md", "b.md"], start=1):
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, ns=(i * 10**9, i * 10**9))
    ctx = ToolContext(session_id="s", call_id="c", cwd=tmp_path)
    output = await ToolRegistry([GlobTool(max_results=2)]).call("glob", '{"pattern": "*.md"}', ctx)
    assert text_of(output) == (
        "c.md\na.md\n\n(Showing 2 of 3 paths. The complete result could not be saved; narrow pattern or path "
        "to see more.)"
    )

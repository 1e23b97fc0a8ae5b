"""The glob tool: sorted, capped matches that stay inside the workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.tools import ToolContext, ToolRegistry, builtin_registry

from .conftest import make_ctx, text_of


@pytest.fixture
def tree(workspace: Path) -> Path:
    for rel in ["b.py", "a.py", "notes.md", "src/pkg/mod.py", "src/pkg/data.json", "src/z.py"]:
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    return workspace


async def _glob(registry: ToolRegistry, ctx: ToolContext, **kwargs: object) -> str:
    output = await registry.call("glob", json.dumps(kwargs), ctx)
    assert not output.is_error, text_of(output)
    return text_of(output)


async def test_glob_sorted_relative_matches(tree: Path, registry: ToolRegistry, ctx: ToolContext) -> None:
    assert await _glob(registry, ctx, pattern="*.py") == "a.py\nb.py"
    assert (await _glob(registry, ctx, pattern="**/*.py")).splitlines() == [
        "a.py",
        "b.py",
        "src/pkg/mod.py",
        "src/z.py",
    ]
    assert await _glob(registry, ctx, pattern="*", path="src") == "src/pkg/\nsrc/z.py"
    assert await _glob(registry, ctx, pattern="../*.md", path="src") == "notes.md"


async def test_glob_no_matches(tree: Path, registry: ToolRegistry, ctx: ToolContext) -> None:
    assert await _glob(registry, ctx, pattern="*.rs") == "(no matches)"


async def test_glob_caps_results(tree: Path, ctx: ToolContext) -> None:
    output = await builtin_registry(glob_max_results=2).call("glob", '{"pattern": "**/*"}', ctx)
    lines = text_of(output).splitlines()
    assert len(lines) == 3
    assert lines[2] == "(results capped at 2 paths; narrow the pattern or the path)"
    assert output.meta == {"count": 2, "truncated": True}


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"pattern": "/etc/*"}, "INVALID_ARGUMENTS"),
        ({"pattern": " "}, "INVALID_ARGUMENTS"),
        ({"pattern": "*", "path": "notes.md"}, "NOT_A_DIRECTORY"),
        ({"pattern": "*", "path": "missing"}, "NOT_FOUND"),
        ({"pattern": "*", "path": ".."}, "OUTSIDE_WORKSPACE"),
        ({"pattern": "*", "path": "/"}, "OUTSIDE_WORKSPACE"),
    ],
)
async def test_glob_errors(
    args: dict[str, str], code: str, tree: Path, registry: ToolRegistry, ctx: ToolContext
) -> None:
    output = await registry.call("glob", json.dumps(args), ctx)
    assert (output.is_error, output.code) == (True, code), text_of(output)


async def test_glob_leaves_out_matches_that_escape(tree: Path, registry: ToolRegistry) -> None:
    (tree / "link").symlink_to(tree.parent / "outside")
    inside = await _glob(registry, make_ctx(tree), pattern="link/*")
    assert inside == "(no matches)\n(1 matches outside the workspace were left out)"
    dotdot = await _glob(registry, make_ctx(tree), pattern="../outside/*")
    assert dotdot.startswith("(no matches)")
    allowed = await _glob(registry, make_ctx(tree, allow_outside=True), pattern="../outside/*")
    assert allowed == str(tree.parent / "outside" / "secret.txt")

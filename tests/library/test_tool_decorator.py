"""``@tool``: name, description and an exact, deterministic schema from a typed function."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Literal

import pytest

from dsh import Tool, ToolContext, ToolOutput, ToolRegistry, tool
from dsh.errors import UsageError


@tool
def search(query: str, limit: int = 10, mode: Literal["fast", "deep"] = "fast") -> list[str]:
    """Search the notes.

    Longer explanation the model reads too.

    Args:
        query: What to look for.
        limit: At most this many hits,
            counted after de-duplication.
        mode (str): How hard to look.

    Returns:
        The matching lines.
    """
    return [f"{query}:{limit}:{mode}"]


@tool(name="where_am_i", concurrency_safe=True, kind="read", title="Where")
async def cwd_tool(ctx: ToolContext, suffix: str | None = None) -> str:
    """The workspace of the call."""
    await asyncio.sleep(0)
    return f"{ctx.cwd.name}{suffix or ''}"


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="s", call_id="c", cwd=tmp_path)


def test_spec_from_signature_and_docstring() -> None:
    registry = ToolRegistry([search, cwd_tool])
    specs = {s["name"]: s for s in registry.specs()}
    assert specs["search"] == {
        "name": "search",
        "description": "Search the notes.\n\nLonger explanation the model reads too.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {
                    "type": "integer",
                    "description": "At most this many hits, counted after de-duplication.",
                },
                "mode": {"type": "string", "description": "How hard to look.", "enum": ["fast", "deep"]},
            },
            "required": ["query"],
        },
    }
    # the context parameter is not an argument; an optional one is shown as its type
    assert specs["where_am_i"]["parameters"] == {
        "type": "object",
        "properties": {"suffix": {"type": "string"}},
    }
    assert specs["where_am_i"]["description"] == "The workspace of the call."
    assert isinstance(search, Tool) and isinstance(cwd_tool, Tool)
    assert (cwd_tool.acp_kind, cwd_tool.acp_title({}), search.acp_kind, search.acp_title({})) == (
        "read",
        "Where",
        "other",
        None,
    )


def test_the_schema_is_deterministic_across_processes() -> None:
    import subprocess
    import sys

    code = (
        "import json\nfrom tests.library.test_tool_decorator import search\nfrom dsh import ToolRegistry\n"
        "print(json.dumps(ToolRegistry([search]).specs()))"
    )
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    }
    assert len(outs) == 1
    assert json.loads(outs.pop()) == ToolRegistry([search]).specs()


async def test_calls_validate_run_and_convert_results(tmp_path: Path) -> None:
    registry = ToolRegistry([search, cwd_tool])
    out = await registry.call("search", json.dumps({"query": "q", "limit": 2}), _ctx(tmp_path))
    assert out == ToolOutput.text('["q:2:fast"]')
    out = await registry.call("where_am_i", "{}", _ctx(tmp_path))
    assert out == ToolOutput.text(tmp_path.name)
    bad = await registry.call("search", json.dumps({"limit": "x"}), _ctx(tmp_path))
    assert bad.is_error and bad.code == "INVALID_ARGUMENTS"
    assert registry.prepare("where_am_i", "{}").concurrency_safe is True  # type: ignore[union-attr]
    assert registry.prepare("search", '{"query": "q"}').concurrency_safe is False  # type: ignore[union-attr]


async def test_a_raised_exception_is_an_error_result(tmp_path: Path) -> None:
    @tool
    def boom(n: int) -> None:
        """Fails."""
        raise ValueError(f"bad n {n}")

    @tool
    def quiet() -> None:
        """Says nothing."""

    registry = ToolRegistry([boom, quiet])
    out = await registry.call("boom", '{"n": 3}', _ctx(tmp_path))
    assert out.is_error and out.content[0]["text"] == "Error: bad n 3" and out.code == "TOOL_ERROR"
    assert (await registry.call("quiet", "", _ctx(tmp_path))) == ToolOutput.text("(no output)")


def test_the_function_stays_callable() -> None:
    assert search("x") == ["x:10:fast"]


def test_bad_functions_are_refused_with_the_reason() -> None:
    def untyped(city):  # type: ignore[no-untyped-def]
        """Weather."""

    with pytest.raises(UsageError, match="parameter 'city' needs a type annotation"):
        tool(untyped)

    def nodoc(city: str) -> str:
        return city

    with pytest.raises(UsageError, match="give it a docstring"):
        tool(nodoc)

    def star(*cities: str) -> str:
        """Weather."""
        return ""

    with pytest.raises(UsageError, match="must be a named parameter"):
        tool(star)

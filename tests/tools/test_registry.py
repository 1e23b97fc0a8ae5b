"""ToolRegistry: specs, argument parsing and validation, classification, safe execution."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from dsh.errors import ToolError, ToolInputError, UsageError
from dsh.tools import (
    ClosedArgs,
    PreparedCall,
    ToolArgs,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    builtin_registry,
)

from .conftest import text_of

BUILTINS = [
    "bash",
    "edit",
    "glob",
    "job_kill",
    "job_list",
    "job_output",
    "read",
    "read_image",
    "todo_write",
    "web_fetch",
    "write",
]


class _Point(ClosedArgs):
    x: int
    y: int = 0


class _EchoArgs(ToolArgs):
    title: str = Field("untitled", description="A property that happens to be called title.")
    points: list[_Point] = Field(default_factory=list)
    count: int | None = None
    mode: Literal["quiet", "plain"] = "plain"


class EchoTool:
    """A test tool whose behaviour each test picks."""

    name = "echo"
    description = "Echo the arguments back."
    args_model: type[BaseModel] = _EchoArgs

    def __init__(self, behaviour: str = "echo", safe: Any = True) -> None:
        self.behaviour = behaviour
        self.safe = safe

    def is_concurrency_safe(self, args: BaseModel) -> bool:
        if self.safe == "raise":
            raise RuntimeError("cannot classify")
        return self.safe  # type: ignore[no-any-return]

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        match self.behaviour:
            case "echo":
                return ToolOutput.text(args.model_dump_json())
            case "tool-error":
                raise ToolInputError("count must be even")
            case "crash":
                raise ZeroDivisionError("division by zero")
            case "silent-crash":
                raise KeyError
            case "cancel":
                raise asyncio.CancelledError
            case "not-output":
                return "plain string"  # type: ignore[return-value]
            case "empty":
                return ToolOutput([])
            case _:
                return ToolOutput.text("")


def _walk(node: Any, path: str = "") -> list[str]:
    """Every place a JSON Schema keyword ``title`` occurs (property names are not keywords)."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "title":
                found.append(path)
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    found += _walk(sub, f"{path}.properties.{name}")
            else:
                found += _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found += _walk(item, f"{path}[{i}]")
    return found


# -- specs -----------------------------------------------------------------------------


def test_builtin_specs_are_clean_json_schema() -> None:
    specs = builtin_registry().specs()
    assert [s["name"] for s in specs] == BUILTINS
    for spec in specs:
        assert list(spec) == ["name", "description", "parameters"]
        assert spec["description"]
        params = spec["parameters"]
        assert list(params) in (["type", "properties", "required"], ["type", "properties"]), "no extras"
        assert params["type"] == "object"
        if "required" in params:  # present only when something is required
            assert params["required"] and set(params["required"]) <= set(params["properties"])
        assert _walk(params) == []
        for prop in params["properties"].values():
            assert set(prop) <= {"type", "description", "enum", "items"}, prop  # items: todo_write's list
            assert list(prop)[:2] == ["type", "description"]
        json.dumps(spec)


def test_specs_are_fresh_copies_sorted_by_name() -> None:
    read = builtin_registry().get("read")
    assert read is not None
    registry = ToolRegistry([read, EchoTool()])
    assert registry.names() == ["echo", "read"]
    specs = registry.specs()
    specs[0]["parameters"]["properties"].clear()
    assert registry.specs()[0]["parameters"]["properties"]


def test_nested_models_and_a_property_called_title() -> None:
    params = ToolRegistry([EchoTool()]).specs()[0]["parameters"]
    assert list(params) == ["type", "properties", "$defs"]
    assert "required" not in params, "no required list when nothing is required"
    assert params["properties"]["title"] == {
        "type": "string",
        "description": "A property that happens to be called title.",
    }
    assert params["properties"]["count"] == {"type": "integer"}
    assert params["properties"]["points"]["items"] == {"$ref": "#/$defs/_Point"}
    assert params["$defs"]["_Point"]["required"] == ["x"]
    assert params["$defs"]["_Point"]["additionalProperties"] is False, "nested objects stay closed"
    assert _walk(params) == []


def test_builtins_match_the_original_schemas(upstream: Path) -> None:
    original = {
        t["name"]: t["parameters"]
        for t in json.loads((upstream / "text-turn" / "tool-schemas.expected.json").read_text())["initial"]
    }
    ours = {s["name"]: s["parameters"] for s in builtin_registry().specs()}
    for name in ["read", "write", "edit", "bash"]:
        theirs, mine = original[name], ours[name]
        assert mine["required"] == theirs["required"], name
        assert set(mine["properties"]) <= set(theirs["properties"]), name
        for arg, schema in mine["properties"].items():
            assert schema["type"] == theirs["properties"][arg]["type"], f"{name}.{arg}"
        assert list(mine["properties"]) == [a for a in theirs["properties"] if a in mine["properties"]]
        assert list(mine) == list(theirs), "the same top-level shape"
        assert mine["properties"] != theirs["properties"], "descriptions are our own"
    # every argument the original has and we dropped is tied to a feature we do not have
    dropped = {(n, a) for n in ["read", "write", "edit", "bash"] for a in original[n]["properties"]} - {
        (n, a) for n in ours for a in ours[n]["properties"]
    }
    assert {a for _, a in dropped} <= {"sandbox_permissions", "justification", "run_in_background"}
    assert "glob" not in original
    assert ours["glob"]["required"] == ["pattern"]


def test_recorded_tool_calls_validate(upstream: Path) -> None:
    registry = builtin_registry()
    seen = 0
    for log in sorted(upstream.glob("*/session*.jsonl")):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["type"] != "tool/call" or event["data"]["name"] not in BUILTINS:
                continue
            prepared = registry.prepare(event["data"]["name"], event["data"]["arguments"])
            assert isinstance(prepared, PreparedCall), (log, event["data"])
            seen += 1
    assert seen >= 3


# -- registration ----------------------------------------------------------------------


def test_duplicate_and_malformed_registrations_are_refused() -> None:
    registry = ToolRegistry([EchoTool()])
    with pytest.raises(UsageError, match="already registered"):
        registry.register(EchoTool())
    bad_name = EchoTool()
    bad_name.name = "has space"
    with pytest.raises(UsageError, match="tool name"):
        registry.register(bad_name)
    bad_model = EchoTool()
    bad_model.name = "other"
    bad_model.args_model = dict  # type: ignore[assignment]
    with pytest.raises(UsageError, match="pydantic model"):
        registry.register(bad_model)
    with pytest.raises(UsageError, match="not a tool"):
        registry.register(object())  # type: ignore[arg-type]
    assert len(registry) == 1
    assert "echo" in registry
    assert registry.get("nope") is None


# -- prepare ---------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["", "   ", "\n"])
def test_empty_arguments_mean_an_empty_object(raw: str) -> None:
    prepared = ToolRegistry([EchoTool()]).prepare("echo", raw)
    assert isinstance(prepared, PreparedCall)
    assert prepared.args == _EchoArgs.model_validate({})
    assert prepared.name == "echo"


def test_unknown_tool() -> None:
    output = builtin_registry().prepare("nope", "{}")
    assert isinstance(output, ToolOutput)
    assert output.is_error
    assert output.code == "UNKNOWN_TOOL"
    assert text_of(output) == 'Error: unknown tool "nope"'


@pytest.mark.parametrize(
    "raw", ['{"file_path": ', "{'file_path': 'x'}", '{"file_path": NaN}', '["x"]', '"x"', "null", "3"]
)
def test_arguments_that_are_not_an_object(raw: str) -> None:
    output = builtin_registry().prepare("read", raw)
    assert isinstance(output, ToolOutput)
    assert (output.is_error, output.code) == (True, "INVALID_ARGUMENTS")
    assert text_of(output) == 'Error: invalid arguments: "arguments" must be an object'


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("read", "{}", 'missing required property "file_path"'),
        ("read", '{"file_path": "a", "offset": "abc"}', '"offset" must be a number'),
        ("read", '{"file_path": 3}', '"file_path" must be a string'),
        ("read", '{"file_path": "a", "limit": null}', '"limit" must be a number'),
        ("read", '{"file_path": "a", "limit": true}', '"limit" must be a number'),
        (
            "edit",
            '{"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}',
            '"replace_all" must be a boolean',
        ),
        ("write", '{"content": 1}', 'missing required property "file_path"; "content" must be a string'),
        (
            "bash",
            '{"command": ["ls"]}',
            'missing required property "description"; "command" must be a string',
        ),
        ("echo", '{"count": 1.5}', '"count" must be an integer'),
        ("echo", '{"points": {}}', '"points" must be an array'),
        ("echo", '{"points": [3]}', '"points[0]" must be an object'),
        (
            "echo",
            '{"points": [{"x": 1, "z": 2}, {}]}',
            '"points[0].z" is not a declared property (additionalProperties: false); '
            'missing required property "points[1].x"',
        ),
        ("echo", '{"mode": "loud"}', '"mode" must be one of ["quiet","plain"]'),
    ],
)
def test_schema_violations_use_the_originals_wording(name: str, raw: str, expected: str) -> None:
    registry = builtin_registry()
    registry.register(EchoTool())
    output = registry.prepare(name, raw)
    assert isinstance(output, ToolOutput), output
    assert (output.is_error, output.code) == (True, "INVALID_ARGUMENTS")
    assert text_of(output) == f"Error: invalid arguments: {expected}"


def test_undeclared_top_level_arguments_are_ignored() -> None:
    raw = '{"file_path": "a", "sandbox_permissions": "danger-full-access", "justification": "why"}'
    prepared = builtin_registry().prepare("read", raw)
    assert isinstance(prepared, PreparedCall)
    assert prepared.args.model_dump()["file_path"] == "a"
    assert not hasattr(prepared.args, "sandbox_permissions")


def test_integral_numbers_are_accepted_where_the_schema_says_number() -> None:
    prepared = builtin_registry().prepare("read", '{"file_path": "a", "offset": 3.0}')
    assert isinstance(prepared, PreparedCall)
    assert prepared.args.model_dump()["offset"] == 3
    echo = ToolRegistry([EchoTool()]).prepare("echo", '{"count": 2.0}')
    assert isinstance(echo, PreparedCall)
    assert echo.args.model_dump()["count"] == 2


@pytest.mark.parametrize(
    ("name", "raw", "safe"),
    [
        ("read", '{"file_path": "a"}', True),
        ("glob", '{"pattern": "*"}', True),
        ("write", '{"file_path": "a", "content": ""}', False),
        ("edit", '{"file_path": "a", "old_string": "x", "new_string": "y"}', False),
        ("bash", '{"command": "true", "description": "nothing"}', False),
    ],
)
def test_builtin_concurrency_classes(name: str, raw: str, safe: bool) -> None:
    prepared = builtin_registry().prepare(name, raw)
    assert isinstance(prepared, PreparedCall)
    assert prepared.concurrency_safe is safe


@pytest.mark.parametrize(("safe", "expected"), [(True, True), (False, False), ("raise", False), (1, False)])
def test_classifier_must_say_true_and_may_not_crash(safe: Any, expected: bool) -> None:
    prepared = ToolRegistry([EchoTool(safe=safe)]).prepare("echo", "{}")
    assert isinstance(prepared, PreparedCall)
    assert prepared.concurrency_safe is expected


# -- run -------------------------------------------------------------------------------


async def _run(behaviour: str, ctx: ToolContext) -> ToolOutput:
    return await ToolRegistry([EchoTool(behaviour)]).call("echo", '{"count": 2}', ctx)


async def test_run_returns_the_tool_output(ctx: ToolContext) -> None:
    output = await _run("echo", ctx)
    assert not output.is_error
    assert json.loads(text_of(output))["count"] == 2


@pytest.mark.parametrize(
    ("behaviour", "text", "code"),
    [
        ("tool-error", "Error: count must be even", "INVALID_ARGUMENTS"),
        ("crash", "Error: division by zero", "TOOL_ERROR"),
        ("silent-crash", "Error: KeyError", "TOOL_ERROR"),
        ("not-output", "Error: tool 'echo' returned str, not a ToolOutput", "TOOL_ERROR"),
    ],
)
async def test_failures_become_error_results(behaviour: str, text: str, code: str, ctx: ToolContext) -> None:
    output = await _run(behaviour, ctx)
    assert (output.is_error, output.code, text_of(output)) == (True, code, text)


async def test_tool_error_keeps_a_custom_code(ctx: ToolContext) -> None:
    class Custom(ToolError):
        code = "MY_CODE"

    class Raiser(EchoTool):
        async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
            raise Custom("nope")

    output = await ToolRegistry([Raiser()]).call("echo", "", ctx)
    assert (output.code, text_of(output)) == ("MY_CODE", "Error: nope")


@pytest.mark.parametrize("behaviour", ["empty", "blank"])
async def test_empty_output_is_no_output(behaviour: str, ctx: ToolContext) -> None:
    output = await _run(behaviour, ctx)
    assert text_of(output) == "(no output)"
    assert not output.is_error


async def test_cancellation_propagates(ctx: ToolContext) -> None:
    with pytest.raises(asyncio.CancelledError):
        await _run("cancel", ctx)


async def test_call_short_circuits_on_preparation_errors(ctx: ToolContext) -> None:
    output = await builtin_registry().call("read", "{", ctx)
    assert output.code == "INVALID_ARGUMENTS"


def test_the_job_tools_and_bash_background_have_the_original_parameters(upstream: Path) -> None:
    """Names, types, enums and required lists as in the original's default composition (the
    descriptions are our own)."""
    recorded = json.loads((upstream / "text-turn" / "tool-schemas.expected.json").read_text())["initial"]

    def shape(spec: dict[str, Any]) -> dict[str, Any]:
        params = spec["parameters"]
        props = {
            k: {f: v for f, v in p.items() if f != "description"} for k, p in params["properties"].items()
        }
        return {"properties": props, "required": params.get("required")}

    ours = {s["name"]: shape(s) for s in builtin_registry().specs()}
    for name in ("bash", "job_output", "job_kill", "job_list"):
        theirs = next(s for s in recorded if s["name"] == name)
        assert ours[name] == shape(theirs), name


def test_parameters_schema_is_computed_once_per_model_but_handed_out_as_fresh_copies() -> None:
    from dsh.tools.builtin import BashArgs, BashTool
    from dsh.tools.schema import parameters_schema

    first = parameters_schema(BashArgs)
    first["properties"]["command"]["description"] = "tampered"
    first["properties"].clear()
    second = parameters_schema(BashArgs)
    assert second is not first
    assert "command" in second["properties"]
    assert second["properties"]["command"]["description"] != "tampered"
    assert ToolRegistry([BashTool()]).specs()[0]["parameters"] == second

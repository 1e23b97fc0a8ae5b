"""The steering tools are defined once (``dsh.subagents.control``): ``dsh.temporal`` only
implements their reach, so it defines no tool class and computes no depth."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import dsh.temporal
from dsh.subagents.control import SteeringTool
from dsh.tools import Tool


def test_dsh_temporal_defines_no_tool_class() -> None:
    defined = []
    for info in pkgutil.iter_modules(dsh.temporal.__path__, "dsh.temporal."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__ and issubclass(value, Tool):
                defined.append(f"{module.__name__}.{name}")
    assert defined == [], f"tool classes defined in dsh.temporal: {defined}"


def test_dsh_temporal_calls_no_depth_formula() -> None:
    calls = []
    for path in sorted(Path(dsh.temporal.__path__[0]).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            formulas = ("parent_depth", "depth_below", "child_depth")
            if (
                isinstance(node, ast.Attribute)
                and node.attr in formulas
                and isinstance(node.value, ast.Name)
                and node.value.id == "delegate"
            ):
                calls.append(f"{path.name}:{node.lineno} delegate.{node.attr}")
    assert calls == [], f"depth formulas in dsh.temporal: {calls}"


def test_the_steering_tools_are_one_family() -> None:
    names = {cls.__name__ for cls in SteeringTool.__subclasses__()}
    assert names == {"SendMessageTool", "ListAgentsTool", "InterruptAgentTool", "ReportTool"}

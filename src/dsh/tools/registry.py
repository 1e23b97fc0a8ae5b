"""The tool registry: specs for the model, argument parsing and validation, safe execution."""

from __future__ import annotations

import asyncio
import copy
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from dsh.errors import ToolError, UsageError
from dsh.events.messages import ToolSpec, text_block
from dsh.jsonx import JSONDecodeError, loads
from dsh.tools.base import Tool, ToolContext, ToolOutput
from dsh.tools.builtin import builtin_tools
from dsh.tools.codes import INVALID_ARGUMENTS, TOOL_ERROR, UNKNOWN_TOOL
from dsh.tools.schema import parameters_schema

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_JSON_KIND = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A call whose arguments validated: ready to run."""

    tool: Tool
    args: BaseModel
    concurrency_safe: bool

    @property
    def name(self) -> str:
        return self.tool.name


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(arguments)"


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value) if not isinstance(value, str) else '"' + value + '"'
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _problem(err: Any, allowed: list[str]) -> str:
    where = _location(tuple(err["loc"]))
    kind = err["type"]
    if kind == "missing":
        return f"{where}: required argument is missing"
    if kind == "extra_forbidden":
        return f"{where}: unknown argument (allowed: {', '.join(allowed) or 'none'})"
    return f"{where}: {err['msg']} (got {_shown(err['input'])})"


def _exception_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


class ToolRegistry:
    """The tools one agent may call, by name.

    ``specs()`` and ``names()`` are sorted by name so a request header does not depend on
    registration order.
    """

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: dict[str, ToolSpec] = {}
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add ``tool``; a duplicate or malformed name, or a non-pydantic args model, is refused."""
        if not isinstance(tool, Tool):
            raise UsageError(f"{tool!r} is not a tool (needs name, description, args_model, run)")
        name = tool.name
        if not _NAME.match(name):
            raise UsageError(f"tool name {name!r} must be 1-64 characters of letters, digits, _ or -")
        if name in self._tools:
            raise UsageError(f"a tool named {name!r} is already registered")
        model = tool.args_model
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise UsageError(f"tool {name!r}: args_model must be a pydantic model class")
        self._specs[name] = {
            "name": name,
            "description": tool.description,
            "parameters": parameters_schema(model),
        }
        self._tools[name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def specs(self) -> list[ToolSpec]:
        """``{"name", "description", "parameters"}`` per tool (fresh copies), sorted by name."""
        return [copy.deepcopy(self._specs[name]) for name in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def prepare(self, name: str, raw_arguments: str) -> PreparedCall | ToolOutput:
        """Parse and validate the model's raw argument string.

        An empty (or all-blank) string means ``{}``. A ``null`` for an optional argument means
        the argument is absent. Problems come back as an error :class:`ToolOutput` the model
        can read: ``UNKNOWN_TOOL`` or ``INVALID_ARGUMENTS``.
        """
        tool = self._tools.get(name)
        if tool is None:
            return ToolOutput.error(f'unknown tool "{name}"', UNKNOWN_TOOL)
        prefix = f'invalid arguments for tool "{name}"'
        try:
            parsed = loads(raw_arguments) if raw_arguments.strip() else {}
        except JSONDecodeError as exc:
            return ToolOutput.error(f"{prefix}: not valid JSON ({exc})", INVALID_ARGUMENTS)
        if not isinstance(parsed, dict):
            kind = "null" if parsed is None else _JSON_KIND.get(type(parsed), type(parsed).__name__)
            return ToolOutput.error(f"{prefix}: expected a JSON object, got {kind}", INVALID_ARGUMENTS)
        fields = tool.args_model.model_fields
        arguments = {
            key: value
            for key, value in parsed.items()
            if not (value is None and key in fields and not fields[key].is_required())
        }
        try:
            args = tool.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = [_problem(err, list(fields)) for err in exc.errors()]
            return ToolOutput.error(f"{prefix}:\n" + "\n".join(f"- {p}" for p in problems), INVALID_ARGUMENTS)
        try:
            safe = tool.is_concurrency_safe(args) is True
        except Exception:
            safe = False
        return PreparedCall(tool=tool, args=args, concurrency_safe=safe)

    async def run(self, prepared: PreparedCall, ctx: ToolContext) -> ToolOutput:
        """Run the tool body; every failure becomes an ``Error: <message>`` result.

        :class:`~dsh.errors.ToolError` keeps its ``code``; any other exception gets
        ``TOOL_ERROR``. ``asyncio.CancelledError`` propagates.
        """
        try:
            output: object = await prepared.tool.run(prepared.args, ctx)
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            return ToolOutput.error(_exception_text(exc), exc.code)
        except Exception as exc:
            return ToolOutput.error(_exception_text(exc), TOOL_ERROR)
        if not isinstance(output, ToolOutput):
            return ToolOutput.error(
                f"tool {prepared.name!r} returned {type(output).__name__}, not a ToolOutput", TOOL_ERROR
            )
        if not output.content:
            return ToolOutput([text_block("(no output)")], output.is_error, output.code, output.meta)
        return output

    async def call(self, name: str, raw_arguments: str, ctx: ToolContext) -> ToolOutput:
        """``prepare`` then ``run``: the whole pipeline for one call."""
        prepared = self.prepare(name, raw_arguments)
        if isinstance(prepared, ToolOutput):
            return prepared
        return await self.run(prepared, ctx)


def builtin_registry(
    *,
    bash_default_timeout_ms: int = 120_000,
    bash_max_timeout_ms: int = 600_000,
    bash_max_output_bytes: int = 30_000,
    read_max_output_bytes: int = 100_000,
    glob_max_results: int = 1_000,
) -> ToolRegistry:
    """A registry holding ``read``, ``write``, ``edit``, ``glob`` and ``bash``."""
    return ToolRegistry(
        builtin_tools(
            bash_default_timeout_ms=bash_default_timeout_ms,
            bash_max_timeout_ms=bash_max_timeout_ms,
            bash_max_output_bytes=bash_max_output_bytes,
            read_max_output_bytes=read_max_output_bytes,
            glob_max_results=glob_max_results,
        )
    )

"""The tool registry: specs for the model, argument parsing and validation, safe execution."""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from dsh.errors import ToolError, UsageError
from dsh.events.messages import ToolSpec, text_block
from dsh.jsonx import JSONDecodeError, loads
from dsh.tools.arguments import violations
from dsh.tools.base import ToolContext, ToolLike, ToolOutput, ToolPresentation, present
from dsh.tools.builtin import builtin_tools
from dsh.tools.codes import INVALID_ARGUMENTS, TOOL_ERROR, UNKNOWN_TOOL
from dsh.tools.schema import parameters_schema
from dsh.tools.spill import DEFAULT_MAX_INLINE_BYTES, SpillPolicy

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A call whose arguments validated: ready to run."""

    tool: ToolLike
    args: BaseModel
    concurrency_safe: bool

    @property
    def name(self) -> str:
        return self.tool.name


def _pydantic_problem(err: Any) -> str:
    """A problem pydantic found that the schema check did not (a constraint of the model)."""
    where = ".".join(str(part) for part in err["loc"]) or "arguments"
    return f'"{where}": {err["msg"]}'


def _declared(model: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """The top-level arguments ``model`` declares (by name or alias); the rest are ignored."""
    names: set[str] = set()
    for name, info in model.model_fields.items():
        names.add(name)
        if info.alias:
            names.add(info.alias)
        if isinstance(info.validation_alias, str):
            names.add(info.validation_alias)
    return {key: value for key, value in arguments.items() if key in names}


def _exception_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


class ToolRegistry:
    """The tools one agent may call, by name.

    ``specs()`` and ``names()`` are sorted by name so a request header does not depend on
    registration order. With a ``spill`` policy, long results are saved to a file and
    replaced by a preview after the tool runs (see :mod:`dsh.tools.spill`).
    """

    def __init__(self, tools: list[ToolLike] | None = None, *, spill: SpillPolicy | None = None) -> None:
        self._tools: dict[str, ToolLike] = {}
        self._specs: dict[str, ToolSpec] = {}
        self.spill = spill
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: ToolLike) -> None:
        """Add ``tool``; a duplicate or malformed name, or a non-pydantic args model, is refused."""
        if not isinstance(tool, ToolLike):
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

    def get(self, name: str) -> ToolLike | None:
        return self._tools.get(name)

    def present(self, name: str, arguments: Mapping[str, Any]) -> ToolPresentation:
        """How an ACP client shows a call of ``name`` with these raw arguments (the tool's own
        :meth:`~dsh.tools.base.Tool.acp_title` etc.; an unknown tool: ``other``, its name)."""
        return present(self._tools.get(name), arguments)

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
        """Parse and validate the model's raw argument string, as the original does.

        An empty (or all-blank) string means ``{}``; text that is not JSON stays a string
        (so it is not an object). Problems come back as an error :class:`ToolOutput`:
        ``Error: unknown tool "<name>"`` (``UNKNOWN_TOOL``) or ``Error: invalid arguments:
        v1; v2`` (``INVALID_ARGUMENTS``) with the original's wording per violation.
        Undeclared top-level keys are ignored.
        """
        tool = self._tools.get(name)
        if tool is None:
            return ToolOutput.error(f'unknown tool "{name}"', UNKNOWN_TOOL)
        parsed: Any
        try:
            parsed = loads(raw_arguments) if raw_arguments.strip() else {}
        except JSONDecodeError:
            parsed = raw_arguments
        problems = violations(self._specs[name]["parameters"], parsed)
        if not problems:
            try:
                args = tool.args_model.model_validate(_declared(tool.args_model, parsed))
            except ValidationError as exc:
                problems = [_pydantic_problem(err) for err in exc.errors()]
        if problems:
            return ToolOutput.error(f"invalid arguments: {'; '.join(problems)}", INVALID_ARGUMENTS)
        try:
            safe = tool.is_concurrency_safe(args) is True
        except Exception:
            safe = False
        return PreparedCall(tool=tool, args=args, concurrency_safe=safe)

    async def run(self, prepared: PreparedCall, ctx: ToolContext) -> ToolOutput:
        """Run the tool body; every failure becomes an ``Error: <message>`` result.

        :class:`~dsh.errors.ToolError` keeps its ``code`` (an empty code means none); any
        other exception gets ``TOOL_ERROR``. ``asyncio.CancelledError`` propagates. The
        secrets of ``ctx.redaction`` are scrubbed from the result (:mod:`dsh.tools.redaction`);
        then the spill policy, if any, applies, and ``read`` may open files under its root.
        """
        spill = self.spill
        if spill is not None:
            ctx = replace(ctx, readable_roots=(*ctx.readable_roots, spill.root))
        output = (await self._run(prepared, ctx)).redacted(ctx.redaction)  # before it is spilled
        if spill is not None:
            output = await asyncio.to_thread(spill.apply, prepared.name, ctx.session_id, output)
        return output

    async def _run(self, prepared: PreparedCall, ctx: ToolContext) -> ToolOutput:
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
    bash_max_output_bytes: int = 64_000,
    read_max_output_bytes: int = 51_200,
    glob_max_results: int = 100,
    spill_dir: str | Path | None = None,
    max_inline_bytes: int | None = DEFAULT_MAX_INLINE_BYTES,
) -> ToolRegistry:
    """A registry holding ``read``, ``write``, ``edit``, ``glob`` and ``bash``.

    Results longer than ``max_inline_bytes`` spill to files under ``spill_dir`` (default
    :func:`~dsh.tools.spill.default_spill_root`); ``max_inline_bytes=None`` turns spilling off.
    """
    spill = None if max_inline_bytes is None else SpillPolicy(spill_dir, max_inline_bytes=max_inline_bytes)
    return ToolRegistry(
        builtin_tools(
            bash_default_timeout_ms=bash_default_timeout_ms,
            bash_max_timeout_ms=bash_max_timeout_ms,
            bash_max_output_bytes=bash_max_output_bytes,
            read_max_output_bytes=read_max_output_bytes,
            glob_max_results=glob_max_results,
        ),
        spill=spill,
    )

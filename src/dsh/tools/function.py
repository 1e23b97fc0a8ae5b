"""``@tool``: a model-callable tool from a typed function (sync or async).

The tool's name is the function's name, its description the docstring's text before an
``Args:`` section, and its argument schema comes from the signature: one property per
parameter, in signature order, typed by the annotation, described by the parameter's line
under ``Args:``, required unless it has a default. A parameter annotated
:class:`~dsh.tools.base.ToolContext` receives the call's context and is not in the schema.
The schema goes through :func:`~dsh.tools.schema.parameters_schema` like every class tool's,
so it is exact and deterministic.

What the function returns becomes the result: a :class:`ToolOutput` as it is, ``str`` as
text, ``None`` as ``(no output)``, anything else as compact JSON. A raised exception is an
``Error: ...`` result (the registry's rule). A sync function runs in a worker thread, so it
may block; once started it runs to its end even if the turn is cancelled.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, overload

from pydantic import BaseModel, Field, create_model

from dsh.errors import UsageError
from dsh.jsonx import dumps
from dsh.tools.base import Tool, ToolContext, ToolKind, ToolOutput
from dsh.tools.schema import ToolArgs

_ARGS_HEADERS = frozenset({"args:", "arguments:", "parameters:"})
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(r"^[A-Z][A-Za-z]*( [A-Za-z]+)?:$")


@dataclass(frozen=True, slots=True)
class _Doc:
    description: str
    params: dict[str, str]


def _parse_doc(doc: str | None) -> _Doc:
    """The description and the ``Args:`` lines of a Google-style docstring.

    The description is the text before the first section header (``Args:``, ``Returns:``,
    ...); under ``Args:`` each ``name: text`` or ``name (type): text`` line starts a
    parameter's description and more deeply indented lines continue it.
    """
    description: list[str] = []
    params: dict[str, str] = {}
    section = "description"
    current: str | None = None
    arg_indent: int | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        stripped = line.strip()
        header = bool(line) and not line[0].isspace() and _SECTION.match(stripped) is not None
        if header:
            section = "args" if stripped.lower() in _ARGS_HEADERS else "other"
            current = None
            continue
        if section == "description":
            description.append(line)
        elif section == "args" and stripped:
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(stripped)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(1).lstrip("*")
                params[current] = match.group(2).strip()
            elif current is not None:
                params[current] = f"{params[current]} {stripped}".strip()
    return _Doc("\n".join(description).strip(), params)


def _is_context(annotation: object) -> bool:
    return annotation is ToolContext


def _args_model(fn: Callable[..., object], name: str, doc: _Doc) -> tuple[type[BaseModel], str | None]:
    """The arguments model of ``fn`` and the name of its context parameter (if any)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError) as exc:
        raise UsageError(f"@tool {name}: cannot resolve its annotations: {exc}") from exc
    fields: dict[str, Any] = {}
    context: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise UsageError(f"@tool {name}: parameter {param.name!r} must be a named parameter")
        if param.name not in hints:
            raise UsageError(f"@tool {name}: parameter {param.name!r} needs a type annotation")
        annotation = hints[param.name]
        if _is_context(annotation):
            context = param.name
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default, description=doc.params.get(param.name)))
    model = create_model(f"{name}_args", __base__=ToolArgs, **fields)
    return model, context


def _output(value: object) -> ToolOutput:
    if isinstance(value, ToolOutput):
        return value
    if value is None:
        return ToolOutput.text("")
    if isinstance(value, str):
        return ToolOutput.text(value)
    if isinstance(value, BaseModel):
        return ToolOutput.text(value.model_dump_json())
    return ToolOutput.text(dumps(value).decode())


class FunctionTool(Tool[BaseModel]):
    """A tool made by :func:`tool`; calling it calls the function unchanged.

    Its arguments model is built from the signature, so it is a ``Tool[BaseModel]``;
    ``kind`` / ``title`` are its :attr:`~Tool.acp_kind` and :meth:`~Tool.acp_title`.
    """

    def __init__(
        self,
        fn: Callable[..., object],
        *,
        name: str | None = None,
        description: str | None = None,
        concurrency_safe: bool = False,
        kind: ToolKind = "other",
        title: str | None = None,
    ) -> None:
        self.fn = fn
        self._name = name or fn.__name__
        doc = _parse_doc(fn.__doc__)
        self._description = description if description is not None else doc.description
        if not self._description:
            raise UsageError(f"@tool {self._name}: give it a docstring or description=")
        self._args_model, self._context = _args_model(fn, self._name, doc)
        self._safe = concurrency_safe
        self._async = inspect.iscoroutinefunction(fn)
        self.acp_kind = kind
        self._title = title

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def args_model(self) -> type[BaseModel]:
        return self._args_model

    def is_concurrency_safe(self, args: BaseModel) -> bool:
        return self._safe

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        return self._title

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool({self._name!r})"

    async def call(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        kwargs = {name: getattr(args, name) for name in type(args).model_fields}
        if self._context is not None:
            kwargs[self._context] = ctx
        if self._async:
            value = await typing.cast("typing.Awaitable[object]", self.fn(**kwargs))
        else:
            value = await asyncio.to_thread(self.fn, **kwargs)
        return _output(value)


@overload
def tool(fn: Callable[..., object], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency_safe: bool = False,
    kind: ToolKind = "other",
    title: str | None = None,
) -> Callable[[Callable[..., object]], FunctionTool]: ...


def tool(
    fn: Callable[..., object] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency_safe: bool = False,
    kind: ToolKind = "other",
    title: str | None = None,
) -> FunctionTool | Callable[[Callable[..., object]], FunctionTool]:
    """Make a typed function a tool: ``@tool`` or ``@tool(name=..., concurrency_safe=True)``.

    ``concurrency_safe`` lets calls of it in one model message run in parallel; ``kind`` and
    ``title`` are what ACP clients show (``kind`` one of :data:`~dsh.tools.base.ToolKind`).
    """

    def wrap(f: Callable[..., object]) -> FunctionTool:
        return FunctionTool(
            f, name=name, description=description, concurrency_safe=concurrency_safe, kind=kind, title=title
        )

    return wrap if fn is None else wrap(fn)

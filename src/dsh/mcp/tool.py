"""An MCP server's tool as a dsh tool: ``mcp__<server>__<tool>`` with the server's input schema.

The arguments model is made per tool from its ``inputSchema``: one optional field per
top-level property (aliased, so any property name works), undeclared keys ignored as for
every tool, and a ``model_json_schema`` that is the server's schema — so the registry
offers it (reduced by its one schema rule, ``dsh.tools.schema``) and checks calls against
it. A call sends the arguments the model gave (those the schema declares) and times itself.
``reruns_in_replay`` is ``False``: a replay serves the recorded result after checking the
call (``dsh.tools.served``), unless the replay runs MCP live.
"""

from __future__ import annotations

import copy
import re
from typing import Any, ClassVar, Final, Protocol

from pydantic import BaseModel, ConfigDict, Field, create_model

from dsh.errors import McpServerError
from dsh.tools import Tool, ToolContext, ToolOutput

PREFIX: Final = "mcp__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class ToolCaller(Protocol):
    """What runs an MCP tool call (a session's :class:`~dsh.mcp.servers.McpServers`)."""

    async def call_tool(
        self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext
    ) -> ToolOutput:
        """Call ``tool`` of ``server`` with ``arguments``; a server failure raises ``McpServerError``."""
        ...


def tool_name(server: str, tool: str) -> str:
    """Claude Code's name for ``tool`` of ``server``: ``mcp__<server>__<tool>`` (unsafe characters ``_``)."""
    return f"{PREFIX}{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"


def split_name(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` of an ``mcp__`` name, or ``None``."""
    if not name.startswith(PREFIX) or "__" not in name[len(PREFIX) :]:
        return None
    server, tool = name[len(PREFIX) :].split("__", 1)
    return server, tool


class _SchemaArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")
    mcp_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.mcp_schema)


def args_model(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model whose JSON schema is ``schema`` and whose fields are its properties."""
    properties = schema.get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    fields: dict[str, Any] = {f"p{i}": (Any, Field(default=None, alias=prop)) for i, prop in enumerate(names)}
    model = create_model(f"Mcp_{name}", __base__=_SchemaArgs, **fields)
    shown = {"type": "object", **{k: v for k, v in schema.items() if k != "type"}}
    shown.setdefault("properties", {})
    model.mcp_schema = shown
    return model


class McpTool(Tool[BaseModel]):
    """One tool of one MCP server, called through the session's ``caller``
    (``None``: a tool known only from a recording, which a replay serves)."""

    acp_kind = "other"

    def __init__(
        self,
        server: str,
        tool: str,
        description: str,
        schema: dict[str, Any],
        caller: ToolCaller | None,
        *,
        reruns_in_replay: bool = False,
    ) -> None:
        self.server, self.tool, self.caller = server, tool, caller
        self._name = tool_name(server, tool)
        self._description = description or f"The {tool} tool of the MCP server {server}."
        self._model = args_model(self._name, schema)
        self.reruns_in_replay = reruns_in_replay

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def args_model(self) -> type[BaseModel]:
        return self._model

    def acp_title(self, args: Any) -> str | None:
        return f"{self.server}: {self.tool}"

    async def call(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        if self.caller is None:
            raise McpServerError(
                f"mcp server {self.server!r} is not started in a replay: {self.name} is served from "
                "the recording (or run the replay with --live-mcp)"
            )
        arguments = args.model_dump(by_alias=True, exclude_unset=True)
        return await self.caller.call_tool(self.server, self.tool, arguments, ctx)

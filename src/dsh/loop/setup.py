"""What ``Agent.create`` / ``resume`` take and resolve: the tool set and the configuration."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from dsh.errors import UsageError
from dsh.loop.config import AgentConfig
from dsh.model import Model, NamedModel
from dsh.tools import ToolLike, ToolRegistry
from dsh.tools.function import tool

ToolsArg = ToolRegistry | Iterable[ToolLike | Callable[..., object]]
"""An agent's ``tools=``: a whole :class:`ToolRegistry`, or tools and functions to add."""


def agent_tools(
    tools: ToolsArg, standard_tools: bool | None, standard: Callable[[], ToolRegistry]
) -> ToolRegistry:
    """The agent's registry.

    A :class:`ToolRegistry` is the agent's whole tool set, used as it is. Otherwise the
    standard tools (``standard()``: ``Agent.standard_registry``, which ``dsh.Agent`` makes
    ``read``, ``write``, ``edit``, ``glob``, ``bash``, ``subagent``, ``subagent_fork``) come
    first unless ``standard_tools=False``, then each given tool; a plain function is made
    one with ``@tool``. A name given twice is refused (``UsageError``).
    """
    if isinstance(tools, ToolRegistry):
        if standard_tools:
            raise UsageError(
                "standard_tools=True with a ToolRegistry: a registry is the whole tool set "
                "(pass a list of tools to add them to the standard ones)"
            )
        return tools
    registry = ToolRegistry() if standard_tools is False else standard()
    for item in tools:
        registry.register(item if isinstance(item, ToolLike) else tool(item))
    return registry


def agent_config(config: AgentConfig | None, model: Model) -> AgentConfig:
    """``config`` (default :class:`AgentConfig`) with its model name filled from the model's own.

    The name is given once: ``AgentConfig.model`` when set, else the model's
    ``model_name`` (``OpenAICompatModel(model=...)``); with neither, ``UsageError``.
    """
    config = config or AgentConfig()
    if config.model:
        return config
    name = model.model_name if isinstance(model, NamedModel) else None
    if not name:
        raise UsageError(
            f"no model name for {model.provider!r}: give it to the model "
            "(OpenAICompatModel(model=...)) or pass config=AgentConfig(model=...)"
        )
    return config.evolve(model=name)

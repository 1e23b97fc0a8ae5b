"""What ``Agent.create`` / ``resume`` take and resolve: the tool set (and the recall tools a
compacted session gains), the configuration, the crash repair of a resumed log and the
closing of what ``from_env`` opened."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence

from dsh.errors import UsageError
from dsh.events import Event
from dsh.events.vocabulary import SESSION_REPAIRED
from dsh.ids import now_ms
from dsh.loop.config import AgentConfig
from dsh.loop.state import FedState
from dsh.model import HoldsSecrets, Model, NamedModel
from dsh.session import interrupted_turn_closers
from dsh.tools import ToolLike, ToolRegistry
from dsh.tools.builtin.recall import recall_tools
from dsh.tools.environment import secret_values
from dsh.tools.function import tool
from dsh.tools.redaction import Redaction

ToolsArg = ToolRegistry | Iterable[ToolLike | Callable[..., object]]
"""An agent's ``tools=``: a whole :class:`ToolRegistry`, or tools and functions to add."""


def agent_redaction(model: Model) -> Redaction:
    """The secrets an agent scrubs from its tools' and hooks' outputs: its model's (the
    provider key) and the values of the variables withheld from tools."""
    held = model.secret_values() if isinstance(model, HoldsSecrets) else ()
    return Redaction((*held, *secret_values()))


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


def offer_recall(tools: ToolRegistry) -> None:
    """Add ``history_search`` and ``history_read`` to a session's tools: once its log holds a
    compaction checkpoint, so a session that never compacts keeps its request head
    (``docs/decisions/2026-12-06-recall-tools.md``). A name the registry has is left alone."""
    for recall in recall_tools():
        if recall.name not in tools:
            tools.register(recall)


def agent_config(config: AgentConfig | None, model: Model) -> AgentConfig:
    """``config`` (default :class:`AgentConfig`) with its model name filled from the model's own.

    The name is given once: ``AgentConfig.model`` when set, else the model's
    ``model_name`` (``OpenAICompatModel``'s ``model=``); with neither, ``UsageError``.
    """
    config = config or AgentConfig()
    if config.model:
        return config
    name = model.model_name if isinstance(model, NamedModel) else None
    if not name:
        raise UsageError(
            f"no model name for {model.provider!r}: give it to the model "
            "(OpenAICompatModel's model=...) or pass config=AgentConfig(model=...)"
        )
    return config.evolve(model=name)


Closer = Callable[[], Awaitable[None]]


async def close_all(closers: Sequence[Closer]) -> None:
    """Call every closer, last opened first; the first failure is raised after the rest ran."""
    first: BaseException | None = None
    for close in reversed(closers):
        try:
            await close()
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first


async def repair_loaded(agent: FedState, dropped_bytes: int) -> None:
    """Close the turn a crash left open in a just-resumed agent's log (``interrupted_turn_closers``,
    at the last event's time) and record a torn tail the load left out (``session/repaired
    {droppedBytes}``, ignorable); checkpoint when either happened."""
    closers = interrupted_turn_closers(agent.session)
    if closers:
        last_time = agent.session.events[-1].time
        for etype, data, sources in closers:
            agent.append(etype, data, source_event_seqs=sources, time=last_time)
    if dropped_bytes:  # the next append truncates the torn tail: say so in the log
        repaired = Event(
            SESSION_REPAIRED,
            agent.session.next_seq,
            now_ms(),
            {"droppedBytes": dropped_bytes},
            ignorable=True,
        )
        agent.feed.event(agent.id, agent.session.append_event(repaired))
    if closers or dropped_bytes:
        await agent.checkpoint()

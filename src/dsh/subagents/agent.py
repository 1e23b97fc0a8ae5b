"""``Agent`` with the standard tools by default: the loop's agent plus the delegation tools.

``from dsh import Agent`` is this class. It only changes where ``Agent.create`` /
``resume`` / ``from_env`` start their tool set (:meth:`standard_registry`); children made by
``fork()`` / ``spawn()`` are of this class too.
"""

from __future__ import annotations

from dsh.loop import Agent as LoopAgent
from dsh.subagents.tools import standard_tools
from dsh.tools.registry import ToolRegistry


class Agent(LoopAgent):
    """The loop's :class:`~dsh.loop.Agent` whose standard tools are :func:`standard_tools`:
    ``read``, ``write``, ``edit``, ``glob``, ``bash``, ``subagent``, ``subagent_fork``."""

    @classmethod
    def standard_registry(cls) -> ToolRegistry:
        return standard_tools()

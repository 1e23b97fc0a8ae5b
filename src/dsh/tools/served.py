"""Which tools re-run in a replay and which are served: the seam between a replay and the tools.

A tool whose result depends on the world outside the workspace (``web_fetch``, MCP
tools) cannot re-run keylessly: it sets ``Tool.reruns_in_replay = False``. When the agent's
model is a replay that knows recorded results (:class:`RecordedResults`), such a call is not
run at all: the replay serves the recorded result of the same call id, after checking the
live call's name and arguments equal the recorded ones (a difference is a divergence). Every
other tool re-runs for real (the workspace is the recording's).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from dsh.tools.base import Tool, ToolLike, ToolOutput


@runtime_checkable
class RecordedResults(Protocol):
    """A source of recorded tool results (``dsh.replay.ReplayModel`` is one)."""

    def recorded_result(self, session_id: str, call_id: str, name: str, arguments: str) -> ToolOutput:
        """The recorded result of this call. When the live name or arguments differ from the
        recorded call, or nothing was recorded for it, the replay notes its divergence and
        the call gets an error result naming it (nothing is run either way)."""
        ...


def reruns_in_replay(tool: ToolLike) -> bool:
    """Whether a replay runs ``tool`` for real (a plain ``ToolLike`` does)."""
    return not isinstance(tool, Tool) or tool.reruns_in_replay

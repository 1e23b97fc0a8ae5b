"""The built-in tools (``read``, ``write``, ``edit``, ``glob``, ``bash``, the job tools), their factory."""

from __future__ import annotations

from dsh.tools.base import ToolLike
from dsh.tools.builtin.bash import BashArgs, BashTool
from dsh.tools.builtin.edit import EditArgs, EditTool
from dsh.tools.builtin.glob_tool import GlobArgs, GlobTool
from dsh.tools.builtin.job_tools import JobKillTool, JobListTool, JobOutputTool
from dsh.tools.builtin.read import ReadArgs, ReadTool
from dsh.tools.builtin.read_image import ReadImageArgs, ReadImageTool
from dsh.tools.builtin.recall import (
    HistoryReadArgs,
    HistoryReadTool,
    HistorySearchArgs,
    HistorySearchTool,
    recall_tools,
)
from dsh.tools.builtin.todo import TodoArgs, TodoWriteTool
from dsh.tools.builtin.write import WriteArgs, WriteTool
from dsh.tools.web.tool import WebFetchArgs, WebFetchTool

__all__ = [
    "BashArgs",
    "BashTool",
    "EditArgs",
    "EditTool",
    "GlobArgs",
    "GlobTool",
    "HistoryReadArgs",
    "HistoryReadTool",
    "HistorySearchArgs",
    "HistorySearchTool",
    "JobKillTool",
    "JobListTool",
    "JobOutputTool",
    "ReadArgs",
    "ReadImageArgs",
    "ReadImageTool",
    "ReadTool",
    "TodoArgs",
    "TodoWriteTool",
    "WebFetchArgs",
    "WebFetchTool",
    "WriteArgs",
    "WriteTool",
    "builtin_tools",
    "recall_tools",
]


def builtin_tools(
    *,
    bash_default_timeout_ms: int = 120_000,
    bash_max_timeout_ms: int = 600_000,
    bash_max_output_bytes: int = 64_000,
    read_max_output_bytes: int = 51_200,
    glob_max_results: int = 100,
) -> list[ToolLike]:
    """Fresh instances of the built-in tools, configured by the given limits: the five file and
    shell tools, ``job_output``, ``job_kill``, ``job_list`` for ``bash``'s background jobs,
    ``todo_write``, ``read_image`` and ``web_fetch``."""
    return [
        ReadTool(max_output_bytes=read_max_output_bytes),
        WriteTool(),
        EditTool(),
        GlobTool(max_results=glob_max_results),
        BashTool(
            default_timeout_ms=bash_default_timeout_ms,
            max_timeout_ms=bash_max_timeout_ms,
            max_output_bytes=bash_max_output_bytes,
        ),
        JobOutputTool(),
        JobKillTool(),
        JobListTool(),
        TodoWriteTool(),
        ReadImageTool(),
        WebFetchTool(),
    ]

"""``todo_write``: the model's structured task list, in the original's schema and texts.

The whole list is sent on every call and replaces the previous one. The tool keeps no state:
it appends ``todo/write`` to the session's log (``ToolContext.log``) and the latest one is
the list (``dsh.events.todos.current_todos``), so a resumed session and a fork child see it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from dsh.events.todos import TODO_STATUSES, TodoItem, TodoStatus, todo_counts, todo_write
from dsh.events.vocabulary import TODO_WRITE
from dsh.jsonx import dumps
from dsh.tools.base import Tool, ToolContext, ToolKind, ToolOutput
from dsh.tools.codes import tool_error
from dsh.tools.schema import ClosedArgs, ToolArgs

_CONTENT = "What the task is — a short imperative line."
_STATUS = "pending (not started) | in_progress (now) | completed (done)."
_TODOS = "The COMPLETE task list, replacing any previous list."
_ITEMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "content": {"type": "string", "description": _CONTENT},
        "status": {"type": "string", "description": _STATUS, "enum": list(TODO_STATUSES)},
    },
    "required": ["content", "status"],
}

_PARALLEL = (
    "Mark every todo being actively worked on `in_progress` — several at once when work genuinely "
    "runs in parallel (e.g. concurrent subagents or background commands), one for sequential work; "
    "while work remains, at least one task should be `in_progress`."
)
_SEQUENTIAL = (
    "Keep AT MOST ONE todo `in_progress` at a time; while work remains, exactly one active task "
    "should be `in_progress`."
)


def _description(parallel: bool) -> str:
    return (
        "Record and update a structured task list for the current work. Send the ENTIRE list every "
        "call — it REPLACES the previous list (there are no partial updates, no per-item edits). Use "
        "it to plan multi-step work and show progress: add one todo per concrete step before you "
        f"start. {_PARALLEL if parallel else _SEQUENTIAL} Mark a todo `completed` the moment it is "
        "done (do not batch completions), and allow no `in_progress` item only once all work is "
        "complete. Skip the list for trivial single-step tasks. Statuses: `pending` (not started), "
        "`in_progress` (being worked on now), `completed` (finished)."
    )


class TodoArgsItem(ClosedArgs):
    content: str = Field(description=_CONTENT)
    status: TodoStatus = Field(description=_STATUS)


class TodoArgs(ToolArgs):
    todos: Annotated[
        list[TodoArgsItem],
        WithJsonSchema({"type": "array", "description": _TODOS, "items": _ITEMS_SCHEMA}),
    ] = Field(description=_TODOS)


def checked_todos(items: list[TodoArgsItem], *, parallel: bool) -> list[TodoItem]:
    """The list as logged (content trimmed), or the original's first refusal."""
    seen: set[str] = set()
    todos: list[TodoItem] = []
    for item in items:
        content = item.content.strip()
        if not content:
            raise tool_error("invalid todo: `content` must be a non-empty string")
        if content in seen:
            raise tool_error(f"invalid todos: duplicate content {dumps(content).decode()}")
        seen.add(content)
        todos.append({"content": content, "status": item.status})
    active = sum(1 for t in todos if t["status"] == "in_progress")
    if not parallel and active > 1:
        raise tool_error(f"invalid todos: at most one task may be in_progress (got {active})")
    return todos


class TodoWriteTool(Tool[TodoArgs]):
    """Replace the session's task list (``allow_parallel_in_progress``: the original's ACP setting)."""

    name = "todo_write"
    args_model = TodoArgs
    acp_kind: ToolKind = "think"

    def __init__(self, *, allow_parallel_in_progress: bool = True) -> None:
        self.parallel = allow_parallel_in_progress

    @property
    def description(self) -> str:
        return _description(self.parallel)

    async def call(self, args: TodoArgs, ctx: ToolContext) -> ToolOutput:
        todos = checked_todos(list(args.todos), parallel=self.parallel)
        if ctx.log is None:
            raise tool_error("todo_write requires an owning agent session")
        ctx.log(TODO_WRITE, todo_write(todos))
        pending, active, done = todo_counts(todos)
        return ToolOutput.text(
            f"Updated todo list: {pending} pending, {active} in progress, {done} completed."
        )

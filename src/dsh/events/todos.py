"""The session's task list: the ``todo/write`` payload and the one rule reading it back.

The log is the state, as in the original: each ``todo_write`` call appends ``todo/write
{todos: [{content, status}]}`` and the latest one is the list. A resumed session reads it
from its log, and a fork child from the prefix it inherited (its parent's list as of the cut).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, TypedDict, cast, get_args

from dsh.events.envelope import Event
from dsh.events.vocabulary import TODO_WRITE

TodoStatus = Literal["pending", "in_progress", "completed"]
TODO_STATUSES: tuple[TodoStatus, ...] = get_args(TodoStatus)


class TodoItem(TypedDict):
    """One task: its text and status (the logged key order)."""

    content: str
    status: TodoStatus


class TodoWriteData(TypedDict):
    """``todo/write``: the complete list, replacing any earlier one."""

    todos: list[TodoItem]


def todo_write(todos: Iterable[TodoItem]) -> TodoWriteData:
    """The ``todo/write`` payload in the original's key order."""
    return {"todos": [{"content": t["content"], "status": t["status"]} for t in todos]}


def todos_of(event: Event) -> list[TodoItem] | None:
    """The list a ``todo/write`` event sets (``None`` for another event or a malformed one)."""
    if event.type != TODO_WRITE or not isinstance(event.data, dict):
        return None
    todos = event.data.get("todos")
    if not isinstance(todos, list):
        return None
    items = [t for t in todos if isinstance(t, dict)]
    ok = all(isinstance(t.get("content"), str) and t.get("status") in TODO_STATUSES for t in items)
    return [cast(TodoItem, {"content": t["content"], "status": t["status"]}) for t in items] if ok else None


def current_todos(events: Sequence[Event]) -> list[TodoItem] | None:
    """The session's list now: the latest ``todo/write`` (``None`` when it never wrote one)."""
    for event in reversed(events):
        todos = todos_of(event)
        if todos is not None:
            return todos
    return None


def todo_counts(todos: Sequence[TodoItem]) -> tuple[int, int, int]:
    """How many are pending, in progress and completed."""
    return tuple(sum(1 for t in todos if t["status"] == s) for s in TODO_STATUSES)  # type: ignore[return-value]


TODO_MARK: dict[TodoStatus, str] = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
"""How a status shows in a terminal (``dsh log``, the live view)."""


def todo_lines(todos: Sequence[TodoItem]) -> list[str]:
    """The list as lines, one ``[ ] content`` per task."""
    return [f"{TODO_MARK[t['status']]} {t['content']}" for t in todos]

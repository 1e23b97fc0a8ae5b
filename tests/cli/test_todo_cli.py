"""The task list in ``dsh log`` (an imported recording of the original) and in the live view."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from dsh.cli.render import LiveView
from dsh.events import Event

from .conftest import Dsh


def test_dsh_log_shows_the_todo_list(dsh_sqlite: Dsh, upstream: Path) -> None:
    dsh_sqlite("sessions", "import", str(upstream / "todo-write" / "session.jsonl")).ok()
    out = dsh_sqlite("log", "d9d967e8").ok().stdout
    assert "☰ todo list: [~] read the code; [~] watch the background build; [ ] write the fix" in out


def test_the_live_view_shows_the_todo_list() -> None:
    buffer = io.StringIO()
    view = LiveView(Console(file=buffer, width=200, no_color=True))
    todos = {"todos": [{"content": "read", "status": "completed"}, {"content": "fix", "status": "pending"}]}
    view.event("s1", Event("todo/write", 3, 0, todos))
    assert buffer.getvalue().splitlines() == ["☰ todo list (2)", "  [x] read", "  [ ] fix"]

"""Ids, paths and types from a log reach the terminal with control characters escaped (S3).

A recorded log is untrusted input: an id or a cwd holding ``ESC [ 2 J`` or an OSC title
sequence must not drive the user's terminal, a newline must not forge a table row.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from dsh.cli.render import LiveView
from dsh.cli.tables import terminal_safe
from dsh.events import Event
from dsh.events import chunks as ck

from .conftest import Dsh

EVIL_ID = "s-\x1b[2J\x1b]0;pwned\x07-\u202egnp.exe\nfake row"
STORED_ID = "s-\u202egnp.exe\u2066-\u200bx"
"""An id a store accepts (no control character: ``dsh.ids``) that still must not reach a terminal raw."""
EVIL_CWD = "/w/\x1b[31mred\x9b1m"
EVIL_TYPE = "x/\x1b[5mblink"
CONTROL = ("\x1b", "\x07", "\x9b", "\u202e")


def _no_controls(text: str) -> None:
    for char in CONTROL:
        assert char not in text, (char, text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain-id 0123", "plain-id 0123"),
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("tab\there\nnl", "tab\\there\\nnl"),
        ("c1\x9bdel\x7f", "c1\\x9bdel\\x7f"),
        ("bidi\u202eltr\u2066x\u2069", "bidi\\u202eltr\\u2066x\\u2069"),
        ("line\u2028sep", "line\\u2028sep"),
        ("café ✓ 漢字 👩‍💻", "café ✓ 漢字 👩‍💻"),
    ],
)
def test_terminal_safe(text: str, shown: str) -> None:
    assert terminal_safe(text) == shown


def test_terminal_safe_keeps_newlines_and_tabs_of_streamed_text() -> None:
    assert terminal_safe("a\nb\tc\x1b[2Jd\re", multiline=True) == "a\nb\tc\\x1b[2Jd\\re"


def test_show_list_inspect_and_import_escape_what_the_log_says(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    header = {"type": "session", "version": 2, "id": EVIL_ID, "createdAt": 1, "cwd": EVIL_CWD,
              "isSeeded": False, "delegationDepth": 0, "agentPreset": "p\x1b[1m"}  # fmt: skip
    events = [
        {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
        {"type": EVIL_TYPE, "seq": 1, "time": 2, "data": {"note": "\x1b[2J\u202e"}, "ignorable": True},
    ]
    path = tmp_path / "evil.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [header, *events]) + "\n")
    inspected = dsh_sqlite("log", "inspect", path).ok()
    refused = dsh_sqlite("sessions", "import", path)  # control characters are no session id (dsh.ids)
    assert refused.code != 0 and refused.stderr.count("\n") == 1 and "invalid session id" in refused.stderr
    _no_controls(refused.stderr)
    path.write_text("\n".join(json.dumps(line) for line in [{**header, "id": STORED_ID}, *events]) + "\n")
    dsh_sqlite("sessions", "import", path).ok()
    listed = dsh_sqlite("sessions", "list").ok()
    shown = dsh_sqlite("sessions", "show", STORED_ID, "--events").ok()
    for result in (inspected, listed, shown):
        _no_controls(result.stdout)
        assert "fake row" not in result.stdout.splitlines()[0:1], "a newline in an id forged a line"
    assert "s-\\u202egnp" in shown.stdout and "/w/\\x1b[31mred\\x9b1m" in shown.stdout
    assert "x/\\x1b[5mblink" in shown.stdout and "p\\x1b[1m" in shown.stdout
    assert "s-\\u202egnp" in listed.stdout and "s-\\x1b[2J" in inspected.stdout
    assert json.loads(dsh_sqlite("sessions", "show", STORED_ID, "--json").ok().stdout)["id"] == STORED_ID


def test_the_live_view_escapes_labels_names_and_streamed_text() -> None:
    out = io.StringIO()
    view = LiveView(Console(file=out, width=200, color_system=None), root_session="root")
    child = "child-\x1b[2J"
    view.chunk("root", ck.text_delta(0, "line one\nline \x1b]0;title\x07two\t."))
    view.event(
        child,
        Event("subagent/descriptor", 0, 0, {"provider": "spawn\x1b[1m", "label": "lab\u202eel",
                                            "delegation": {"parentSession": "root"}}),
    )  # fmt: skip
    view.event(child, Event("tool/call", 1, 0, {"turn": 1, "step": 1, "callId": "c", "name": "ba\x1bsh",
                                                "arguments": '{"cmd": "\\u001b[2J"}'}))  # fmt: skip
    failure = {"code": "X\x1b", "message": "m\x9b"}
    view.event(child, Event("assistant/attempt", 2, 0, {"turn": 1, "step": 1, "failure": failure}))
    view.console.print(view.footer("root\x1b[0m", "completed\x1b[1m", "no usage \x9b"))
    text = out.getvalue()
    _no_controls(text)
    assert "line one\nline \\x1b]0;title\\x07two" in text  # Rich expands the tab
    assert "lab\\u202eel" in text and "ba\\x1bsh" in text and "child-\\x1b[2J" in text


def test_tree_import_export_tail_and_errors_escape_what_the_log_says(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    header = {"type": "session", "version": 2, "id": STORED_ID, "createdAt": 1, "cwd": EVIL_CWD,
              "isSeeded": False, "delegationDepth": 0}  # fmt: skip
    events = [{"type": EVIL_TYPE, "seq": 0, "time": 2, "data": {"note": "n"}, "ignorable": True}]
    path = tmp_path / "evil\x1b[2J.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [header, *events]) + "\n")
    imported = dsh_sqlite("sessions", "import", path).ok()
    tree = dsh_sqlite("sessions", "tree").ok()
    exported = dsh_sqlite("sessions", "export", STORED_ID, "--output", tmp_path / "out.jsonl")
    tail = dsh_sqlite("sessions", "tail", STORED_ID).ok()
    again = dsh_sqlite("sessions", "import", path)  # the id exists: an error line naming it
    for text in (imported.stdout, tree.stdout, exported.stdout, tail.stdout, again.stderr):
        _no_controls(text)
    assert "s-\\u202egnp" in tree.stdout and "x/\\x1b[5mblink" in tail.stdout
    assert again.code != 0 and "s-\\u202egnp" in again.stderr


def test_the_live_view_shows_hook_runs() -> None:
    out = io.StringIO()
    view = LiveView(Console(file=out, width=200, color_system=None), root_session="root")
    blocked = {"turn": 1, "point": "PreToolUse", "handlerId": "claude-code:PreToolUse:1", "decision": "block",
               "exitCode": 2, "durationMs": 3.1, "stderrSummary": "bash is \x1b[2Jdisabled"}  # fmt: skip
    passed = {"turn": 1, "point": "Stop", "handlerId": "claude-code:Stop:2", "decision": "pass",
              "exitCode": 0,
              "durationMs": 1.0}  # fmt: skip
    view.event("root", Event("hook/result", 0, 0, blocked))
    view.event("root", Event("hook/result", 1, 0, passed))
    text = out.getvalue()
    _no_controls(text)
    assert "hook PreToolUse (claude-code:PreToolUse:1): block, exit 2 — bash is \\x1b[2Jdisabled" in text
    assert "hook Stop (claude-code:Stop:2): pass, exit 0" in text

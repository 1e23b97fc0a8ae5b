"""``terminal_open / send / read / signal / close / list``: the original's terminal tools.

They act on the calling session's :class:`~dsh.tools.terminals.TerminalTable` (the agent's,
through ``ToolContext.extras``) with the original's schemas and texts; every single-text
result is bounded to ``max_result_bytes`` (its UTF-8-safe head plus ``\\n[output
truncated]``; a send keeps its viewport's tail instead, so the wait and session lines stay).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from dsh.tools.base import Tool, ToolContext, ToolOutput
from dsh.tools.codes import tool_error
from dsh.tools.environment import tool_environment
from dsh.tools.process_group import signal_group
from dsh.tools.schema import Number, ToolArgs
from dsh.tools.terminals import BACKENDS, Terminal, TerminalTable
from dsh.tools.workspace import workspace_root

TERMINALS_EXTRA: Final = "dsh.tools.terminals"
"""``ToolContext.extras`` key of the session's :class:`TerminalTable` (set by the agent)."""
DEFAULT_MAX_RESULT_BYTES: Final = 262_144
TRUNCATED: Final = "\n[output truncated]"


def _table(ctx: ToolContext) -> TerminalTable:
    table = ctx.extras.get(TERMINALS_EXTRA)
    if not isinstance(table, TerminalTable) or ctx.agent is None:
        raise tool_error("terminal tools require an initiating agent")
    return table


def _terminal(ctx: ToolContext, session_id: str) -> Terminal:
    if not session_id.strip():
        raise tool_error("sessionId must be a non-empty string")
    terminal = _table(ctx).get(session_id)
    if terminal is None:
        raise tool_error(f"unknown PTY session {session_id}")
    if terminal.closing:
        raise tool_error(f"PTY session {session_id} is closing")
    return terminal


def _head(text: str, limit: int) -> str:
    return text.encode()[: max(limit, 0)].decode(errors="ignore")


def _tail(text: str, limit: int) -> str:
    data = text.encode()
    return data[len(data) - max(limit, 0) :].decode(errors="ignore") if limit > 0 else ""


class _TerminalTool(Tool[ToolArgs]):
    def __init__(self, *, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> None:
        self.max_result_bytes = max_result_bytes

    def bounded(self, text: str) -> ToolOutput:
        if len(text.encode()) > self.max_result_bytes:
            text = _head(text, self.max_result_bytes - len(TRUNCATED)) + TRUNCATED
        return ToolOutput.text(text)


class OpenArgs(ToolArgs):
    type: str = Field(description='Registered terminal backend type, usually "shell".')
    name: str | None = Field(None, description='Optional owner-local display name such as "main" or "gdb".')
    cwd: str | None = Field(
        None, description="Initial working directory. Defaults to the deployment workspace root."
    )


class TerminalOpenTool(_TerminalTool):
    """Open a persistent terminal."""

    name = "terminal_open"
    description = (
        "Create a persistent, owner-isolated terminal session from a registered backend type. Use this for "
        "shell or REPL state that must survive across tool calls."
    )
    args_model = OpenArgs

    async def call(self, args: ToolArgs, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, OpenArgs)
        table = _table(ctx)
        kind = args.type.strip()
        if not kind:
            raise tool_error("type must be a non-empty string")
        if kind not in BACKENDS:
            raise tool_error(f'no PTY backend registered for "{kind}"')
        if args.name is not None and not args.name.strip():
            raise tool_error("PTY session name must be non-empty")
        if args.name is not None and any(t.name == args.name for t in table.all()):
            raise tool_error(f'PTY session name "{args.name}" already exists for this owner')
        workspace = workspace_root(ctx)
        cwd = Path(ctx.cwd / args.cwd) if args.cwd else workspace
        if not cwd.is_dir():
            raise tool_error(f'cannot open a terminal in "{cwd}": not a directory')
        env = tool_environment(ctx.session_id)
        terminal, motd = await table.open(
            kind, args.name, cwd, policy=ctx.sandbox, workspace=workspace, env=env
        )
        label = f" ({terminal.name})" if terminal.name else ""
        prefix = f"started terminal session {terminal.id}{label} [type: {kind}]\n"
        body = motd or "(no startup output)"
        if len((prefix + body).encode()) > self.max_result_bytes:
            room = self.max_result_bytes - len(prefix.encode()) - len(TRUNCATED)
            return ToolOutput.text(prefix + _tail(body, room) + TRUNCATED)
        return ToolOutput.text(prefix + body)


class SendArgs(ToolArgs):
    sessionId: str = Field(description="Terminal session id returned by terminal_open or terminal_list.")
    text: str = Field(description="UTF-8 text to write to the terminal.")
    submit: bool | None = Field(
        None,
        description="Submit Enter after text (default true). Set false for control characters or incomplete "
        "REPL input.",
    )


class TerminalSendTool(_TerminalTool):
    """Send input to a terminal and wait."""

    name = "terminal_send"
    description = (
        "Send text to a persistent terminal. By default Enter is submitted and the call waits for a prompt, "
        "stdin wait, output silence, timeout, or session exit."
    )
    args_model = SendArgs

    async def call(self, args: ToolArgs, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, SendArgs)
        terminal = _terminal(ctx, args.sessionId)
        if terminal.sending:
            raise tool_error(f"PTY session {terminal.id} already has an active send")
        viewport, reason = await _table(ctx).send(terminal, args.text, submit=args.submit is not False)
        status = terminal.status()
        tail = f"\n[wait: {reason}]\n[session: {status}]"
        shown = viewport or "(no new output)"
        text = shown + tail
        if len(text.encode()) > self.max_result_bytes:
            room = self.max_result_bytes - len(tail.encode()) - len(TRUNCATED)
            text = _tail(shown, room) + tail + TRUNCATED
        # ``truncated``: the backend's own cut (the original's meta); the viewport is kept whole
        meta = {"viewport": viewport, "waitReason": reason, "sessionStatus": status, "truncated": False}
        return ToolOutput.text(text, meta=meta)


class ReadArgs(ToolArgs):
    sessionId: str = Field(description="Terminal session id.")
    offset: Number | None = Field(None, description="Newest-relative line offset (default 0).")
    count: Number | None = Field(None, description="Requested line count (default 500; backend caps apply).")


class TerminalReadTool(_TerminalTool):
    """Read a terminal's retained output."""

    name = "terminal_read"
    description = "Read a bounded page of retained output from a persistent terminal without sending input."
    args_model = ReadArgs

    async def call(self, args: ToolArgs, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, ReadArgs)
        terminal = _terminal(ctx, args.sessionId)
        lines = terminal.output.split("\n") if terminal.output else []
        offset = max(int(args.offset or 0), 0)
        count = min(max(int(args.count if args.count is not None else 500), 0), 500)
        end = max(len(lines) - offset, 0)
        page = lines[max(end - count, 0) : end]
        body = "\n".join(page) if page else "(no retained output)"
        return self.bounded(f"{body}\n[lines: {offset}-{offset + len(page)} of {len(lines)}]")


Signal = Literal["SIGINT", "SIGTERM", "SIGKILL", "SIGTSTP", "SIGHUP"]


class SignalArgs(ToolArgs):
    sessionId: str = Field(description="Terminal session id.")
    signal: Signal = Field(
        description="Signal to deliver. Shell-targeted SIGKILL is rejected; use terminal_close."
    )


class TerminalSignalTool(_TerminalTool):
    """Signal a terminal's foreground process group."""

    name = "terminal_signal"
    description = "Send an allowed signal to the current foreground process group of a persistent terminal."
    args_model = SignalArgs

    async def call(self, args: ToolArgs, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, SignalArgs)
        terminal = _terminal(ctx, args.sessionId)
        if args.signal == "SIGKILL" and terminal.type == "shell":
            raise tool_error("SIGKILL would kill the shell itself; use terminal_close")
        pgid = terminal.pid  # the terminal's process group (its session leader's)
        try:
            foreground = os.tcgetpgrp(terminal.fd)
            pgid = foreground if foreground > 0 else pgid
        except OSError:
            pass
        signal_group(pgid, signal.Signals[args.signal])
        return self.bounded(f"delivered {args.signal} to foreground process group {pgid}")


class SessionArgs(ToolArgs):
    sessionId: str = Field(description="Terminal session id.")


class TerminalCloseTool(_TerminalTool):
    """Close a terminal."""

    name = "terminal_close"
    description = "Close one persistent terminal and wait until its captured owned process tree is gone."
    args_model = SessionArgs

    async def call(self, args: ToolArgs, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, SessionArgs)
        if not args.sessionId.strip():
            raise tool_error("sessionId must be a non-empty string")
        terminal = _table(ctx).get(args.sessionId)
        if terminal is None:
            raise tool_error(f"unknown PTY session {args.sessionId}")
        if terminal.closing:
            return self.bounded(f"terminal session {terminal.id} was already closing")
        await _table(ctx).close(terminal)
        return self.bounded(f"closed terminal session {terminal.id}")


class NoArgs(ToolArgs):
    pass


class TerminalListTool(_TerminalTool):
    """List the session's terminals."""

    name = "terminal_list"
    description = "List persistent terminal sessions owned by the current agent."
    args_model = NoArgs
    concurrency_safe = True

    async def call(self, args: ToolArgs, ctx: ToolContext) -> ToolOutput:
        rows = []
        for t in _table(ctx).all():
            label = f" ({t.name})" if t.name else ""
            status = t.status()
            pid = f" pid={t.pid}" if status == "running" else ""
            rows.append(f"{t.id}{label} [{t.type}] {status}{pid}")
        return self.bounded("\n".join(rows) if rows else "(no terminal sessions)")


def terminal_tools(*, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> list[_TerminalTool]:
    """The six terminal tools (``max_result_bytes``: each result's bound, at least 64)."""
    limit = max(max_result_bytes, 64)
    kinds = (TerminalOpenTool, TerminalSendTool, TerminalReadTool, TerminalSignalTool, TerminalCloseTool)
    return [*(k(max_result_bytes=limit) for k in kinds), TerminalListTool(max_result_bytes=limit)]

"""Firing hooks for one session: matching groups, running commands serially, logging each run.

For an event, each dialect (Claude Code first, then Codex) runs its matching groups in
configuration order (user-level file first, then the workspace file), the commands of a
group one after the other. Every command run is logged in the session:

``hook/invoked {turn, point, dialect, handlerId, matcher?}`` before it starts, and
``hook/result {turn, point, handlerId, decision, exitCode?, stderrSummary?,
stdoutSummary?, timedOut?, durationMs}`` after it ended. ``decision`` is the command's own
decision, else ``stop`` (``continue: false``), else ``pass``; the summaries are the trimmed
streams cut at :data:`SUMMARY_CHARS` characters (then ``…``) and left out when empty.

A command runs with ``bash -c`` in the session cwd, with the tool environment
(:func:`~dsh.tools.environment.tool_environment`: no provider keys or listed secrets) minus
every ``DSH_*`` name, plus ``CLAUDE_PROJECT_DIR=<session cwd>`` for Claude Code hooks.
A command that fails (exit other than 0 and 2, timeout, cannot start) or answers
something unreadable is logged with a warning on the ``dsh.hooks`` logger and ignored.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from dsh.events import Event
from dsh.events.vocabulary import HOOK_INVOKED, HOOK_RESULT
from dsh.hooks.config import DIALECTS, MATCHERLESS, Dialect, HookCommand, HookFile, HookGroup
from dsh.hooks.decode import Verdict, decode, merge
from dsh.hooks.handler_ids import next_handler_id
from dsh.hooks.outcome import HookOutcome
from dsh.hooks.payload import Subject, payload
from dsh.hooks.process import run_hook_command
from dsh.tools.environment import tool_environment
from dsh.tools.redaction import NO_REDACTION, Redaction
from dsh.tools.sandbox import SandboxPolicy, confine

log = logging.getLogger("dsh.hooks")

SUMMARY_CHARS: Final = 500

Append = Callable[..., Event]
"""``append(type, data)``: adds an event to the session log."""


def summary(text: str) -> str | None:
    """The trimmed text, cut at :data:`SUMMARY_CHARS` characters plus ``…``; ``None`` if empty."""
    text = text.strip()
    if not text:
        return None
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS] + "…"


def hook_environment(dialect: Dialect, session_id: str, cwd: str) -> dict[str, str]:
    """The environment a hook command gets (see the module docstring)."""
    env = {k: v for k, v in tool_environment(session_id).items() if not k.startswith("DSH_")}
    if dialect == "claude-code":
        env["CLAUDE_PROJECT_DIR"] = cwd
    return env


class SessionHooks:
    """The hooks of one session (its own id, cwd and log), ready to fire."""

    def __init__(
        self,
        files: Sequence[HookFile],
        *,
        subject: Subject,
        append: Append,
        sandbox: SandboxPolicy | None = None,
        redaction: Redaction = NO_REDACTION,
    ) -> None:
        self.files = tuple(files)
        self._redaction = redaction
        self.subject = subject
        self._append = append
        self._wrap: Callable[[list[str]], list[str]] | None = None
        if sandbox is not None and sandbox.confined:
            where = Path(subject.cwd)
            self._wrap = functools.partial(confine, sandbox, workspace=where, cwd=where)

    def configured(self, point: str) -> bool:
        """Whether any file has a group for ``point``."""
        return any(f.groups(point) for f in self.files)

    async def fire(
        self, point: str, turn: int, fields: dict[str, Any], *, subject: str | None = None
    ) -> HookOutcome:
        """Run every matching command of ``point``; ``subject`` is what matchers test (a tool name)."""
        merged = []
        for dialect in DIALECTS:
            groups = [g for f in self.files if f.dialect == dialect for g in f.groups(point)]
            matching = [g for g in groups if point in MATCHERLESS or g.matcher.matches(subject or "")]
            if not matching:
                continue
            stdin = payload(dialect, point, self.subject, turn, fields)
            verdicts = [
                await self._run(dialect, point, turn, group, command, stdin)
                for group in matching
                for command in group.commands
            ]
            merged.append((dialect, merge(verdicts, dialect)))
        return HookOutcome(point, tuple(merged))

    async def _run(
        self, dialect: Dialect, point: str, turn: int, group: HookGroup, command: HookCommand, stdin: bytes
    ) -> Verdict:
        handler_id = next_handler_id(dialect, point)
        invoked: dict[str, Any] = {"turn": turn, "point": point, "dialect": dialect, "handlerId": handler_id}
        if group.matcher.source:
            invoked["matcher"] = group.matcher.source
        self._append(HOOK_INVOKED, invoked)
        run = await run_hook_command(
            command.command,
            cwd=self.subject.cwd,
            env=hook_environment(dialect, self.subject.session_id, self.subject.cwd),
            stdin=stdin,
            timeout_ms=command.timeout_ms,
            wrap=self._wrap,
        )
        # the secrets out before anything reads the outputs (decision, context, summaries)
        run = replace(run, stdout=self._redaction.text(run.stdout), stderr=self._redaction.text(run.stderr))
        verdict = decode(run, point, dialect)
        result: dict[str, Any] = {
            "turn": turn,
            "point": point,
            "handlerId": handler_id,
            "decision": verdict.logged_decision,
        }
        if run.exit_code is not None:
            result["exitCode"] = run.exit_code
        for key, text in (("stderrSummary", run.stderr), ("stdoutSummary", run.stdout)):
            shown = summary(text)
            if shown is not None:
                result[key] = shown
        if run.timed_out:
            result["timedOut"] = True
        result["durationMs"] = run.duration_ms
        self._append(HOOK_RESULT, result)
        if verdict.problem is not None:
            log.warning(
                "hook %s (%s) in session %s: %s; ignored (fails open)",
                handler_id,
                command.command,
                self.subject.session_id,
                verdict.problem
                if not run.timed_out
                else f"it ran past its {command.timeout_ms} ms timeout and was killed",
            )
        if verdict.system_message is not None:
            log.warning("hook %s: %s", handler_id, verdict.system_message)
        return verdict

    # -- the events the loop fires ----------------------------------------------------------

    async def user_prompt_submit(self, turn: int, prompt: str) -> HookOutcome:
        return await self.fire("UserPromptSubmit", turn, {"prompt": prompt})

    async def pre_tool_use(self, turn: int, tool_name: str, tool_input: object, call_id: str) -> HookOutcome:
        fields = {"tool_name": tool_name, "tool_input": tool_input, "tool_use_id": call_id}
        return await self.fire("PreToolUse", turn, fields, subject=tool_name)

    async def post_tool_use(
        self, turn: int, tool_name: str, tool_input: object, call_id: str, response: str
    ) -> HookOutcome:
        fields = {
            "tool_name": tool_name,
            "tool_input": tool_input,
            "tool_use_id": call_id,
            "tool_response": response,
        }
        return await self.fire("PostToolUse", turn, fields, subject=tool_name)

    async def stop(self, turn: int) -> HookOutcome:
        return await self.fire("Stop", turn, {})

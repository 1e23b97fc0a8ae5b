"""Reading a hook command's answer (exit code, JSON stdout) and merging the answers of one event.

One command (streams trimmed):

- exit **2** ⇒ ``block``, the reason is stderr when non-empty;
- exit **0** with stdout starting ``{`` that parses to an object ⇒ its fields: ``continue``,
  ``systemMessage``, a top-level ``decision`` (``approve``/``block`` only) with ``reason``,
  and ``hookSpecificOutput`` only when its ``hookEventName`` is the firing event:
  ``permissionDecision`` (``allow``/``deny``/``ask``, overriding ``decision``),
  ``permissionDecisionReason``, ``additionalContext``; ``updatedInput`` is ignored;
- Codex only: at ``UserPromptSubmit``/``SessionStart``, exit 0 with plain (non-JSON)
  stdout makes that text the context;
- any other exit, a timeout or a command that could not start ⇒ no decision (fail open).

Merging the commands of one event: deny/block (3) beats ask (2) beats allow/approve (1)
beats none; the reasons of the winning rank are joined with a blank line (ranks 2 and 3
only); contexts are kept in order. Codex ignores ``ask``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from dsh import jsonx
from dsh.hooks.config import Dialect
from dsh.hooks.process import CommandRun

RANKS: Final[dict[str, int]] = {"block": 3, "deny": 3, "ask": 2, "approve": 1, "allow": 1}
_TOP_LEVEL: Final = frozenset({"approve", "block"})
_PERMISSION: Final = frozenset({"allow", "deny", "ask"})
_PLAIN_CONTEXT_EVENTS: Final = frozenset({"UserPromptSubmit", "SessionStart"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one command said. ``decision`` is its own word (``block``, ``deny``, ``ask``,
    ``allow``, ``approve``) or ``None``; ``problem`` is why its output was not read."""

    decision: str | None = None
    reason: str | None = None
    context: str | None = None
    stop: bool = False
    system_message: str | None = None
    problem: str | None = None

    @property
    def logged_decision(self) -> str:
        """``hook/result.decision``: its own decision, else ``stop`` (``continue: false``), else ``pass``."""
        return self.decision or ("stop" if self.stop else "pass")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _from_json(document: dict[str, Any], event: str) -> Verdict:
    decision = document.get("decision") if document.get("decision") in _TOP_LEVEL else None
    reason = _text(document.get("reason"))
    context = None
    specific = document.get("hookSpecificOutput")
    if isinstance(specific, dict) and specific.get("hookEventName") == event:
        permission = specific.get("permissionDecision")
        if permission in _PERMISSION:
            decision = permission
            reason = _text(specific.get("permissionDecisionReason")) or reason
        context = _text(specific.get("additionalContext"))
    return Verdict(
        decision=decision,
        reason=reason,
        context=context,
        stop=document.get("continue") is False,
        system_message=_text(document.get("systemMessage")),
    )


def decode(run: CommandRun, event: str, dialect: Dialect) -> Verdict:
    """The verdict of one finished command (see the module docstring)."""
    if run.spawn_error is not None:
        return Verdict(problem=run.spawn_error)
    if run.timed_out:
        return Verdict(problem="it timed out and was killed")
    stdout, stderr = run.stdout.strip(), run.stderr.strip()
    if run.exit_code == 2:
        return Verdict(decision="block", reason=stderr or None)
    if run.exit_code != 0:
        return Verdict(problem=f"it exited with {run.exit_code if run.exit_code is not None else 'a signal'}")
    if stdout.startswith("{"):
        try:
            document = jsonx.loads(stdout)
        except jsonx.JSONDecodeError as exc:
            return Verdict(problem=f"its stdout is not valid JSON ({exc})")
        if isinstance(document, dict):
            return _from_json(document, event)
        return Verdict(problem="its stdout is JSON but not an object")
    if dialect == "codex" and event in _PLAIN_CONTEXT_EVENTS and stdout:
        return Verdict(context=stdout)
    return Verdict()


@dataclass(frozen=True, slots=True)
class Merged:
    """The verdicts of one event in one dialect, merged."""

    rank: int = 0
    reasons: tuple[str, ...] = ()
    contexts: tuple[str, ...] = field(default_factory=tuple)


def merge(verdicts: Iterable[Verdict], dialect: Dialect) -> Merged:
    """Highest rank wins; reasons of the winning rank (2-3) in order; every context in order."""
    rank = 0
    reasons: list[str] = []
    contexts: list[str] = []
    for verdict in verdicts:
        if verdict.context is not None:
            contexts.append(verdict.context)
        if verdict.decision is None or (dialect == "codex" and verdict.decision == "ask"):
            continue
        r = RANKS[verdict.decision]
        if r > rank:
            rank, reasons = r, []
        if r == rank and r >= 2 and verdict.reason is not None:
            reasons.append(verdict.reason)
    return Merged(rank, tuple(reasons), tuple(contexts))

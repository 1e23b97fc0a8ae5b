"""Hook configuration files: the Claude Code and Codex shapes, matchers, and the drop-whole-file rule.

A file is ``{"hooks": {EVENT: [GROUP, ...]}}`` or the bare ``{EVENT: [GROUP, ...]}``; a
GROUP is ``{"matcher"?: str, "hooks": [{"type"?: "command", "command": str, "timeout"?:
seconds}]}`` (Codex also reads ``timeoutSec`` and skips ``"async": true`` entries).
Entries of another ``type`` are skipped, groups left empty are dropped, events a dialect
does not know are ignored. Anything else that is wrong — the file is not JSON, a value has
the wrong shape, or a matcher on an event that uses matchers is not a valid regex — drops
**the whole file** with one warning on the ``dsh.hooks`` logger, as the original does.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from dsh import jsonx
from dsh.errors import UsageError

log = logging.getLogger("dsh.hooks")

Dialect = Literal["claude-code", "codex"]
DIALECTS: Final[tuple[Dialect, ...]] = ("claude-code", "codex")

FILE_NAMES: Final[dict[Dialect, str]] = {"claude-code": "hooks.json", "codex": "codex-hooks.json"}
"""The file each dialect reads, in the session cwd and in the user-level directory."""

EVENTS: Final[dict[Dialect, frozenset[str]]] = {
    "claude-code": frozenset(
        {
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SubagentStart",
            "SubagentStop",
        }
    ),
    "codex": frozenset({"PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "Stop"}),
}
"""The events each dialect's files may configure (the original's lists)."""

MATCHERLESS: Final = frozenset({"UserPromptSubmit", "Stop"})
"""Events whose matcher is ignored (so an invalid one there is harmless)."""

DEFAULT_TIMEOUT_MS: Final = 600_000
MAX_TIMEOUT_MS: Final = 600_000

_EXACT_NAMES = re.compile(r"^[A-Za-z0-9_|]+$")


@dataclass(frozen=True, slots=True)
class Matcher:
    """Which subjects (tool names, ...) a group applies to."""

    source: str | None
    names: frozenset[str] | None = None
    pattern: re.Pattern[str] | None = None

    def matches(self, subject: str) -> bool:
        if self.names is not None:
            return subject in self.names
        if self.pattern is not None:
            return self.pattern.search(subject) is not None
        return True


def compile_matcher(source: str | None, dialect: Dialect) -> Matcher:
    """Absent, ``""`` and ``"*"`` match everything. Claude Code: ``[A-Za-z0-9_|]+`` is a
    ``|``-separated list of exact names, anything else an unanchored regex; Codex: always a
    regex. An invalid regex raises :class:`~dsh.errors.UsageError`."""
    if source is None or source in ("", "*"):
        return Matcher(source)
    if dialect == "claude-code" and _EXACT_NAMES.match(source):
        return Matcher(source, names=frozenset(n for n in source.split("|") if n))
    try:
        return Matcher(source, pattern=re.compile(source))
    except re.error as exc:
        raise UsageError(f"matcher {source!r} is not a valid regular expression ({exc})") from exc


@dataclass(frozen=True, slots=True)
class HookCommand:
    """One command a group runs."""

    command: str
    timeout_ms: int = DEFAULT_TIMEOUT_MS


@dataclass(frozen=True, slots=True)
class HookGroup:
    """Commands that run, serially, when the group's matcher accepts the subject."""

    matcher: Matcher
    commands: tuple[HookCommand, ...]


@dataclass(frozen=True, slots=True)
class HookFile:
    """One dialect's valid configuration file."""

    dialect: Dialect
    path: str
    events: Mapping[str, tuple[HookGroup, ...]]

    def groups(self, event: str) -> tuple[HookGroup, ...]:
        return self.events.get(event, ())


def _timeout_ms(entry: Mapping[str, Any], dialect: Dialect, where: str) -> int:
    keys = ("timeout", "timeoutSec") if dialect == "codex" else ("timeout",)
    for key in keys:
        value = entry.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise UsageError(f"{where}.{key} must be a positive number of seconds")
        return int(min(value * 1000, MAX_TIMEOUT_MS))
    return DEFAULT_TIMEOUT_MS


def _commands(entries: object, dialect: Dialect, where: str) -> tuple[HookCommand, ...]:
    if not isinstance(entries, list):
        raise UsageError(f"{where}.hooks must be a list")
    out: list[HookCommand] = []
    for j, entry in enumerate(entries):
        at = f"{where}.hooks[{j}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{at} must be an object")
        if entry.get("type", "command") != "command":
            continue
        if dialect == "codex" and entry.get("async") is True:
            continue
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise UsageError(f"{at}.command must be a non-empty string")
        out.append(HookCommand(command, _timeout_ms(entry, dialect, at)))
    return tuple(out)


def parse_hooks(document: object, dialect: Dialect, path: str = "<hooks>") -> HookFile:
    """Validate a parsed file; any problem raises :class:`~dsh.errors.UsageError` naming where."""
    if not isinstance(document, dict):
        raise UsageError("the file must hold a JSON object")
    table = document.get("hooks", document)
    if not isinstance(table, dict):
        raise UsageError('"hooks" must be an object mapping event names to lists of groups')
    events: dict[str, tuple[HookGroup, ...]] = {}
    for event, groups in table.items():
        if event not in EVENTS[dialect]:
            continue
        if not isinstance(groups, list):
            raise UsageError(f"{event} must be a list of groups")
        kept: list[HookGroup] = []
        for i, group in enumerate(groups):
            where = f"{event}[{i}]"
            if not isinstance(group, dict):
                raise UsageError(f"{where} must be an object")
            source = group.get("matcher")
            if source is not None and not isinstance(source, str):
                raise UsageError(f"{where}.matcher must be a string")
            matcher = Matcher(source) if event in MATCHERLESS else compile_matcher(source, dialect)
            commands = _commands(group.get("hooks"), dialect, where)
            if commands:
                kept.append(HookGroup(matcher, commands))
        if kept:
            events[event] = tuple(kept)
    return HookFile(dialect, path, events)


def load_hook_file(path: Path, dialect: Dialect) -> HookFile | None:
    """The file's hooks; ``None`` when it does not exist or is invalid (then with a warning)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _drop(path, f"cannot read it ({exc.strerror or exc})")
        return None
    try:
        document = jsonx.loads(raw)
    except jsonx.JSONDecodeError as exc:
        _drop(path, f"it is not valid JSON ({exc})")
        return None
    try:
        return parse_hooks(document, dialect, str(path))
    except UsageError as exc:
        _drop(path, str(exc))
        return None


def _drop(path: Path, problem: str) -> None:
    log.warning(
        "hooks: ignoring %s: %s; none of its hooks will run (fix the file to enable them)", path, problem
    )

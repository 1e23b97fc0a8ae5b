"""Which workspace paths a checkpoint leaves out: ``.git/`` and what ``.gitignore`` files say.

Each directory's ``.gitignore`` applies below it (git's rules, the common subset): blank
lines and ``#`` comments skipped, ``!`` re-includes, a trailing ``/`` matches directories
only, a ``/`` elsewhere anchors the pattern to that directory, ``*``, ``?``, ``[...]`` and
``**`` as in git; the last matching pattern wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ALWAYS: frozenset[str] = frozenset({".git"})
"""Names never checkpointed (git's own state)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``.gitignore`` line, as a regex over paths relative to its directory."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def parse(text: str) -> list[Rule]:
    """The rules of one ``.gitignore`` file."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        line = line[1:] if negate else line
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = _translate(line.lstrip("/"))
        regex = re.compile(("" if anchored else "(?:.*/)?") + body + "$", re.DOTALL)
        rules.append(Rule(regex, negate, dir_only))
    return rules


def rules_in(directory: Path) -> list[Rule]:
    """The rules of ``directory``'s own ``.gitignore`` (none when it has none or cannot be read)."""
    try:
        return parse((directory / ".gitignore").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []


def ignored(stack: list[tuple[str, list[Rule]]], rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` (relative to the workspace) is ignored by the rules of its directories
    (``stack``: each directory's prefix and rules, outermost first)."""
    name = rel.rsplit("/", 1)[-1]
    if name in ALWAYS:
        return True
    verdict = False
    for prefix, rules in stack:
        if prefix and not rel.startswith(prefix):
            continue
        local = rel[len(prefix) :]
        for rule in rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(local):
                verdict = not rule.negate
    return verdict

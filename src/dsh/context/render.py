"""The instruction texts the model sees: the original's wrapper, intro, sections and byte budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from dsh.context.files import InstructionFile

OPEN: Final = "<system-reminder>\n"
CLOSE: Final = "\n</system-reminder>"
INTRO: Final = (
    "The following workspace instructions may be relevant to your work. Use them as guidance when "
    "applicable. More specific instructions take precedence over broader ones. They do not override "
    "system, developer, or direct user instructions."
)
CUT_INTRO: Final = "Workspace instructions were omitted or truncated to fit the configured byte budget."
SET_NOTE: Final = (
    "These instructions apply to work under `{dir}`. Use them as guidance when relevant; more specific "
    "instructions take precedence. They do not override system, developer, or direct user instructions."
)
REPLACE_NOTE: Final = (
    "This file changed after it was loaded. Use the following content instead of the previously loaded "
    "instructions from this file."
)
REMOVE_NOTE: Final = "The previously loaded instructions from this file no longer apply."

Action = Literal["set", "replace", "remove"]


@dataclass(frozen=True, slots=True)
class Change:
    """One transition of a scope: ``set`` (new), ``replace`` (changed), ``remove`` (gone)."""

    action: Action
    file: InstructionFile

    def heading(self, baseline: bool) -> str:
        path = self.file.path
        if baseline:
            return f"Instructions from: {path}"
        if self.action == "set":
            return f"Additional instructions from: {path}\n\n" + SET_NOTE.format(dir=self.file.directory)
        if self.action == "replace":
            return f"Updated instructions from: {path}\n\n{REPLACE_NOTE}"
        return f"Instructions removed: {path}\n\n{REMOVE_NOTE}"

    def body(self) -> str:
        return "" if self.action == "remove" else self.file.text


def escape(text: str) -> str:
    """A literal ``</system-reminder>`` cannot close the wrapper early."""
    return text.replace("</system-reminder>", "<\\/system-reminder>")


def _section(change: Change, baseline: bool, body: str | None = None) -> str:
    text = change.body() if body is None else body
    heading = change.heading(baseline)
    return heading if change.action == "remove" else f"{heading}\n\n{text}"


def _wrap(parts: Sequence[str]) -> str:
    return OPEN + escape("\n\n".join(parts)) + CLOSE


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _prefix(text: str, limit: int) -> str:
    """The largest UTF-8-safe prefix of at most ``limit`` bytes."""
    raw = text.encode("utf-8")[: max(limit, 0)]
    return raw.decode("utf-8", errors="ignore")


def render(changes: Sequence[Change], *, baseline: bool, max_bytes: int) -> tuple[str, list[Change]]:
    """One batch's text within ``max_bytes`` and the changes it carries (dropped broadest first,
    then the most specific truncated, then the marker alone)."""
    intro = [INTRO] if baseline else []

    def full(kept: Sequence[Change], budget: str | None, lead: list[str]) -> str:
        parts = ([budget] if budget else []) + lead + [_section(c, baseline) for c in kept]
        return _wrap(parts)

    text = full(changes, None, intro)
    if _size(text) <= max_bytes:
        return text, list(changes)
    omitted: list[str] = []
    for start in range(1, len(changes)):
        omitted.append(changes[start - 1].file.path)
        line = _budget_line(max_bytes, omitted, None)
        text = full(changes[start:], line, intro)
        if _size(text) <= max_bytes:
            return text, list(changes[start:])
    last = changes[-1]
    omitted = [c.file.path for c in changes[:-1]]
    whole = last.body()
    for lead in (intro, [CUT_INTRO]):
        for _ in range(3):  # the kept size's digits change the line's size: settle it
            kept = _fit(last, baseline, omitted, lead, max_bytes, whole)
            if kept is not None:
                return kept, [last]
    marker = _budget_line(max_bytes, [*omitted, last.file.path], None)
    heading = f"{marker}\n\n{escape(last.heading(baseline))}"
    if _size(heading) <= max_bytes:
        return heading, [last]
    return _prefix(marker, max_bytes), []


def _fit(
    change: Change, baseline: bool, omitted: list[str], lead: list[str], max_bytes: int, whole: str
) -> str | None:
    total = _size(whole)
    guess = total
    for _ in range(4):
        line = _budget_line(max_bytes, omitted, (change.file.path, total, guess))
        empty = _wrap([line, *lead, _section(change, baseline, "")])
        room = max_bytes - _size(empty)
        if room < 0:
            return None
        body = _prefix(whole, room)
        while body and _size(escape(body)) > room:
            body = _prefix(body, _size(body) - 1)
        kept = _size(body)
        if kept == guess:
            text = _wrap([line, *lead, _section(change, baseline, body)])
            return text if _size(text) <= max_bytes else None
        guess = kept
    return None


def _budget_line(max_bytes: int, omitted: Sequence[str], truncated: tuple[str, int, int] | None) -> str:
    parts = []
    if omitted:
        parts.append("omitted " + ", ".join(omitted))
    if truncated is not None:
        path, was, now = truncated
        parts.append(f"truncated {path} from {was} to {now} bytes")
    return f"Workspace instruction budget {max_bytes} bytes: " + "; ".join(parts)

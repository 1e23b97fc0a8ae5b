"""Line diffs for the ``write`` and ``edit`` meta: unified-diff hunks with 3 lines of context.

Texts are compared LF-normalized, line by line with each line's ``\\n`` kept (so a missing
final newline is a change, as in a unified diff). A hunk is ``(old lines, new lines)``
including its context; the meta shows each side joined with ``\\n``, and an empty old side
(a pure insertion into an empty file) as ``null``.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any, Final

CONTEXT: Final = 3
DIFF_BASIS_MAX_BYTES: Final = 10 * 1024 * 1024


def _lines(text: str) -> list[str]:
    parts = text.replace("\r\n", "\n").split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _side(lines: list[str]) -> str:
    return "\n".join(line.removesuffix("\n") for line in lines)


def _spans(a: list[str], b: list[str], context: int) -> list[tuple[int, int, int, int]]:
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return [(g[0][1], g[-1][2], g[0][3], g[-1][4]) for g in matcher.get_grouped_opcodes(context)]


def hunk_meta(path: str, old_lines: list[str], new_lines: list[str]) -> dict[str, Any]:
    """``{path, oldText, newText}`` for one hunk (``oldText`` is ``null`` when the old side is empty)."""
    return {"path": path, "oldText": _side(old_lines) if old_lines else None, "newText": _side(new_lines)}


def write_diffs(path: str, old: str, new: str) -> list[dict[str, Any]]:
    """One ``{path, oldText, newText}`` per hunk turning ``old`` into ``new``."""
    a, b = _lines(old), _lines(new)
    return [hunk_meta(path, a[i1:i2], b[j1:j2]) for i1, i2, j1, j2 in _spans(a, b, CONTEXT)]


def edit_diff(path: str, old: str, new: str) -> dict[str, Any] | None:
    """One ``{path, oldText, newText}`` spanning every hunk (``None`` when nothing changed)."""
    a, b = _lines(old), _lines(new)
    spans = _spans(a, b, CONTEXT)
    if not spans:
        return None
    return hunk_meta(path, a[spans[0][0] : spans[-1][1]], b[spans[0][2] : spans[-1][3]])

"""A scenario replay as one self-contained HTML page: sessions side by side, first divergence highlighted."""

from __future__ import annotations

from dataclasses import dataclass

from dsh.snapshot import ScenarioResult
from dsh.ui.assets import CSS
from dsh.ui.templates import environment

_ENV = environment()


@dataclass(frozen=True, slots=True)
class Pane:
    """One side of a recorded/live comparison, split into lines; ``first`` is the first differing line."""

    lines: list[str]
    first: int | None


def panes(recorded: str, live: str) -> tuple[Pane, Pane]:
    """Both texts by line, each marking the first line where they differ (``None`` if equal)."""
    left, right = recorded.splitlines(), live.splitlines()
    first: int | None = None
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        if a != b:
            first = index
            break
    mark_left = first if first is not None and first < len(left) else None
    mark_right = first if first is not None and first < len(right) else None
    return Pane(left, mark_left), Pane(right, mark_right)


def render_replay_report(result: ScenarioResult) -> str:
    """The replay report of ``result`` (inline CSS, no script): every string escaped.

    Per session: kind, recorded → live ids, cut, calls served, tool results, the first
    divergence (recorded vs live side by side, the first differing line highlighted, and the
    unified diff), and the recorded vs live final texts.
    """
    return _ENV.get_template("report.html").render(result=result, css=CSS, panes=panes)

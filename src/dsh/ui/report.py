"""A scenario replay as one self-contained HTML page: sessions side by side, first divergence highlighted."""

from __future__ import annotations

from dsh.snapshot import ScenarioResult
from dsh.ui.assets import CSS
from dsh.ui.templates import environment

_ENV = environment()


def render_replay_report(result: ScenarioResult) -> str:
    """The replay report of ``result`` (inline CSS, no script): every string escaped.

    Per session: kind, recorded → live ids, cut, calls served, tool results, the first
    divergence (recorded vs live request text, and their diff), and the final texts.
    """
    return _ENV.get_template("report.html").render(result=result, css=CSS)

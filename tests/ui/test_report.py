"""The HTML replay report: a clean replay, and a diverged one with hostile text."""

from __future__ import annotations

from dataclasses import replace

from starlette.testclient import TestClient

from dsh.replay.fidelity import Divergence
from dsh.snapshot import ScenarioResult
from dsh.store.url import open_store
from dsh.ui.app import create_app
from dsh.ui.report import panes, render_replay_report
from tests.ui.conftest import Loaded
from tests.ui.helpers import SCRIPT


def test_clean_replay_report_lists_every_session(mixed_store: Loaded) -> None:
    html = render_replay_report(mixed_store.result)
    assert "replay ok" in html and "subagent-mixed" in html
    for s in mixed_store.result.sessions:
        assert f'data-recorded="{s.recorded_id}"' in html
        assert f"live {s.live_id}" in html
    assert "cut 8" in html and "kind-fork" in html and "kind-spawn" in html
    assert "first divergence" not in html and "<script" not in html


def test_diverged_report_highlights_the_first_difference(mixed_store: Loaded) -> None:
    divergence = Divergence(
        session="fork",
        recorded_id="rec",
        call=2,
        turn=2,
        step=1,
        what="the user message",
        recorded=f"same\nrecorded {SCRIPT}\ntail",
        live="same\nlive line\ntail",
    )
    sessions = [
        replace(s, divergence=divergence) if s.kind == "fork" else s for s in mixed_store.result.sessions
    ]
    result = ScenarioResult(
        scenario="subagent-mixed",
        mode="replay",
        transcript=[],
        sessions=sessions,
        problems=[f"problem {SCRIPT}"],
    )
    html = render_replay_report(result)
    assert "replay failed" in html and "first divergence" in html and "at call 2 (turn 2 step 1)" in html
    assert html.count('class="first-divergence-line"') == 2
    assert '<span class="first-divergence-line">live line</span>' in html
    assert "<script>" not in html and "&lt;script&gt;window.__pwned" in html


def test_panes_mark_the_first_differing_line() -> None:
    left, right = panes("a\nb\nc", "a\nB\nc")
    assert (left.first, right.first) == (1, 1)
    left, right = panes("a", "a\nmore")
    assert (left.first, right.first) == (None, 1)
    assert panes("x", "x")[0].first is None


def test_report_page_in_the_viewer(mixed_store: Loaded) -> None:
    app = create_app(
        lambda: open_store(mixed_store.url), report_html=render_replay_report(mixed_store.result)
    )
    with TestClient(app) as client:
        page = client.get("/report")
        assert page.status_code == 200 and "replay ok" in page.text
        assert 'href="/report"' in client.get("/").text

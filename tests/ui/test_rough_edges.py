"""Viewer rough edges (issue 35, item 16): nested sessions list, "live" only while running, a
timeline legend, ``/s/<prefix>``, and the report's headline keeping its newlines — over a real
server on 127.0.0.1 (routes) and headless Chromium (rendering)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.events import Event, SessionHeader
from dsh.snapshot import ScenarioResult
from dsh.store.url import open_store
from dsh.ui.report import render_replay_report
from tests.ui import pages
from tests.ui.browser import serving
from tests.ui.conftest import Loaded
from tests.ui.helpers import run_in_thread, store_url

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
browser, page = pages.browser, pages.page  # the shared fixtures (tests.ui.pages)


def add_sessions(url: str, *headers: SessionHeader, running: str | None = None) -> None:
    async def go() -> None:
        store = open_store(url)
        try:
            for header in headers:
                await store.create(header)
            if running is not None:  # a turn that started and has not ended
                await store.append(running, [Event("turn/start", 0, 1_800_000_000_000, {"turn": 1})])
        finally:
            await store.close()

    run_in_thread(go)


def test_a_unique_prefix_redirects_an_ambiguous_one_lists_the_candidates(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    add_sessions(
        url,
        SessionHeader(id="abc-one", created_at=1),
        SessionHeader(id="abd-two", created_at=2),
        SessionHeader(id="xyz-three", created_at=3),
    )
    with serving(url) as base, httpx.Client(base_url=base) as http:
        unique = http.get("/s/xy", follow_redirects=False)
        assert unique.status_code == 307 and unique.headers["location"] == "/s/xyz-three"
        assert http.get("/s/xy/events", follow_redirects=False).headers["location"] == "/s/xyz-three/events"
        assert http.get("/s/xy", follow_redirects=True).status_code == 200
        ambiguous = http.get("/s/ab")
        assert ambiguous.status_code == 300
        assert 'href="/s/abc-one"' in ambiguous.text and 'href="/s/abd-two"' in ambiguous.text
        assert "xyz-three" not in ambiguous.text
        assert http.get("/s/nope").status_code == 404


def test_children_are_nested_under_their_parent(page: Any, mixed_store: Loaded) -> None:
    parent = mixed_store.parent
    kids = {mixed_store.child("spawn"), mixed_store.child("fork")}
    with serving(mixed_store.url) as base:
        page.goto(base + "/?sort=created&dir=desc")
        order = page.eval_on_selector_all(
            "tbody tr", "rows => rows.map(r => [r.dataset.session, Number(r.dataset.depth)])"
        )
        ids = [sid for sid, _ in order]
        at = ids.index(parent)
        assert {sid for sid, _ in order[at + 1 : at + 3]} == kids
        assert [depth for _, depth in order[at : at + 3]] == [0, 1, 1]
        x = {sid: page.locator(f'tr[data-session="{sid}"] td a').first.bounding_box()["x"] for sid in ids}
        assert all(x[kid] > x[parent] + 10 for kid in kids), x


def test_live_only_while_running_and_the_timeline_has_a_legend(
    page: Any, mixed_store: Loaded, tmp_path: Path
) -> None:
    url = store_url(tmp_path)
    add_sessions(url, SessionHeader(id="busy-1", created_at=1_800_000_000_000), running="busy-1")
    with serving(mixed_store.url) as base:
        page.goto(base + f"/s/{mixed_store.parent}")
        page.wait_for_selector("[data-connected]", timeout=10_000)
        page.wait_for_timeout(700)  # past the idle reconnect
        assert page.locator("#live.on").count() == 0 and page.inner_text("#live") == ""
        legend = page.locator("#timeline-legend")
        assert legend.is_visible()
        for label in ("user", "assistant", "tool", "turn", "other"):
            assert label in legend.inner_text()
        tick = page.eval_on_selector(".timeline .tick.t-tool", "e => getComputedStyle(e).backgroundColor")
        key = page.eval_on_selector(
            "#timeline-legend .key.t-tool", "e => getComputedStyle(e).backgroundColor"
        )
        assert tick == key
    with serving(url) as base:
        page.goto(base + "/s/busy-1")
        page.wait_for_selector("#live.on", timeout=10_000)
        assert page.inner_text("#live") == "live"


def test_the_report_headline_keeps_its_newlines(page: Any) -> None:
    problem = 'scenario x: transcript differs:\n-{"a": 1}\n+{"a": 2}\n<b>not bold</b>'
    result = ScenarioResult("x", "replay", [], problems=[problem])
    page.set_content(render_replay_report(result))
    shown = page.inner_text("pre.problem")
    assert shown.splitlines() == problem.splitlines()
    assert page.locator("pre.problem b").count() == 0


def test_the_served_html_nests_children_and_has_a_legend(mixed_store: Loaded) -> None:
    """The same over plain HTTP (no browser): row order and depth, the legend's entries."""
    import re

    with serving(mixed_store.url) as base, httpx.Client(base_url=base) as http:
        listing = http.get("/?sort=created&dir=desc").text
        session = http.get(f"/s/{mixed_store.parent}").text
    rows = re.findall(r'<tr data-session="([^"]+)" data-depth="(\d+)"', listing)
    ids = [sid for sid, _ in rows]
    at = ids.index(mixed_store.parent)
    assert {sid for sid, _ in rows[at + 1 : at + 3]} == {
        mixed_store.child("spawn"),
        mixed_store.child("fork"),
    }
    assert [int(d) for _, d in rows[at : at + 3]] == [0, 1, 1]
    assert 'id="timeline-legend"' in session and 'class="key t-tool"' in session
    assert 'data-status="completed"' in session


def test_the_report_headline_is_preformatted_and_escaped() -> None:
    problem = "line one\nline two <b>x</b>"
    html = render_replay_report(ScenarioResult("x", "replay", [], problems=[problem]))
    assert '<pre class="item attempt problem">line one\nline two &lt;b&gt;x&lt;/b&gt;</pre>' in html

"""The viewer in a real headless Chromium (Debian's, driven by Playwright): pages, links, live, inertness.

Screenshots go to ``<pytest basetemp>/artifacts`` (and ``$DSH_UI_ARTIFACTS`` when set).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from dsh.loop import Feed
from tests.ui import pages
from tests.ui.browser import serving
from tests.ui.conftest import Loaded
from tests.ui.helpers import HOSTILE_ID, append_turn, replay_subagent_mixed, store_url

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
browser, page = pages.browser, pages.page  # the shared fixtures (tests.ui.pages)


def shot(tab: Any, artifacts: Path, name: str) -> Path:
    artifacts.mkdir(parents=True, exist_ok=True)
    path = artifacts / f"{name}.png"
    tab.screenshot(path=str(path), full_page=True)
    extra = os.environ.get("DSH_UI_ARTIFACTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / path.name)
    return path


def test_sessions_parent_children_and_fork_transcript(
    page: Any, mixed_store: Loaded, artifacts: Path
) -> None:
    with serving(mixed_store.url) as base:
        page.goto(base + "/")
        rows = page.locator("#sessions tbody tr")
        assert rows.count() == 4
        shot(page, artifacts, "sessions")
        parent_row = page.locator(f'tr[data-session="{mixed_store.parent}"]')
        assert "completed" in parent_row.inner_text()
        parent_row.locator("a").first.click()
        page.wait_for_url(f"**/s/{mixed_store.parent}")
        fork, spawn = mixed_store.child("fork"), mixed_store.child("spawn")
        tree = page.locator("#lineage")
        assert "spawn" in tree.locator(f'li[data-node="{spawn}"]').inner_text()
        assert "fork" in tree.locator(f'li[data-node="{fork}"]').inner_text()
        cut = page.locator(f'.fork-cut[data-child="{fork}"]')
        assert cut.is_visible() and "cut 8" in cut.inner_text()
        reasoning = page.locator("details", has_text="I will call subagent.").first
        assert not page.get_by_text("I will call subagent.").first.is_visible()
        reasoning.locator("summary").click()
        assert page.get_by_text("I will call subagent.").first.is_visible()
        shot(page, artifacts, "session-parent")
        page.locator(f'a.child-link[href="/s/{fork}"]').first.click()
        page.wait_for_url(f"**/s/{fork}")
        transcript = page.locator("#transcript")
        assert "What is the project codeword from earlier?" in transcript.inner_text()
        assert "SAFFRON" in transcript.inner_text()
        assert "inherited prefix (8 events from the parent)" in page.inner_text("body")
        shot(page, artifacts, "session-fork-child")
        page.goto(base + f"/s/{mixed_store.parent}/events")
        assert page.locator("tr.cutrow").count() == 1
        shot(page, artifacts, "events-parent")


def test_recorded_html_and_js_render_inertly(page: Any, mixed_store: Loaded, artifacts: Path) -> None:
    with serving(mixed_store.url) as base:
        for path in ("/", f"/s/{HOSTILE_ID}", f"/s/{HOSTILE_ID}/events"):
            page.goto(base + path)
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned === undefined"), path
            assert page.title() != "PWNED"
            assert page.locator("main script, main img").count() == 0
        assert "<script>window.__pwned = 1" in page.inner_text("body")
        page.goto(base + f"/s/{HOSTILE_ID}")
        assert page.locator(".md strong").inner_text() == "bold"
        assert page.locator('a[href^="javascript:"]').count() == 0
        shot(page, artifacts, "session-hostile")


def test_live_session_appends_a_turn(page: Any, tmp_path: Path, artifacts: Path) -> None:
    url = store_url(tmp_path)
    result = replay_subagent_mixed(url)
    spawn = next(s.live_id for s in result.sessions if s.kind == "spawn")
    assert spawn is not None
    feed = Feed()
    with serving(url, poll_interval=0.05, feed=feed) as base:
        page.goto(base + f"/s/{spawn}")
        page.wait_for_selector("[data-connected]", timeout=10_000)
        assert page.locator("#live.on").count() == 0  # a finished session is never shown live
        assert "LIVE_REPLY" not in page.inner_text("#transcript")
        feed.chunk(spawn, {"type": "text-delta", "index": 0, "text": "<b>stream"})
        feed.chunk(spawn, {"type": "text-delta", "index": 0, "text": "ing</b>"})
        page.locator("#streaming", has_text="<b>streaming</b>").wait_for(timeout=10_000)
        assert page.locator("#transcript b").count() == 0
        shot(page, artifacts, "session-streaming")
        append_turn(url, spawn, "LIVE_REPLY from the *second* turn")
        page.locator("#transcript .item.answer", has_text="LIVE_REPLY").wait_for(timeout=10_000)
        assert page.locator("#transcript em").last.inner_text() == "second"
        assert page.locator("#streaming").count() == 0  # the settled answer replaced it
        assert page.inner_text("#event-count") == "16"
        append_turn(url, spawn, "ANOTHER_LIVE_REPLY")  # after the idle reconnect
        page.locator("#transcript .item.answer", has_text="ANOTHER_LIVE_REPLY").wait_for(timeout=10_000)
        shot(page, artifacts, "session-live")

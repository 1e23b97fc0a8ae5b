"""The viewer shows background children and the notices their settlement put into the parent."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from dsh.snapshot.runner import SCENARIOS
from dsh.store.transfer import import_log
from dsh.store.url import open_store
from dsh.ui.app import create_app
from tests.ui.helpers import run_in_thread, store_url

BACKGROUND = SCENARIOS / "subagent-background"


def _import(url: str) -> tuple[str, list[str]]:
    """Import the scenario's logs; the parent's id and its children's."""

    async def body() -> tuple[str, list[str]]:
        store = open_store(url)
        try:
            headers = [(await import_log(store, p)).header for p in BACKGROUND.glob("session*.jsonl")]
        finally:
            await store.close()
        parent = next(h.id for h in headers if h.parent_session is None)
        return parent, sorted(h.id for h in headers if h.parent_session == parent)

    return run_in_thread(body)


def test_the_parent_page_shows_each_background_child_and_its_settlement_notice(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    parent, children = _import(url)
    assert len(children) == 2
    app = create_app(lambda: open_store(url), label=url, poll_interval=0.02)
    with TestClient(app) as client:
        listed = {s["id"]: s for s in client.get("/api/sessions").json()["sessions"]}
        assert listed[parent]["children"] == 2
        assert all(listed[c]["parentSession"] == parent for c in children)
        page = client.get(f"/s/{parent}").text
        for child in children:
            assert f"Background subagent {child} finished and will do no further work" in page
            assert f'href="/s/{child}"' in page, "the notice or the tree links the child"
        assert "subagent-settled" in page, "the notice is labelled with its source"

"""Fixtures: one SQLite store holding subagent-mixed and a hostile session, and a TestClient."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dsh.snapshot import ScenarioResult
from dsh.store.url import open_store
from dsh.ui.app import create_app
from tests.ui.helpers import add_hostile, replay_subagent_mixed, store_url


@dataclass(frozen=True, slots=True)
class Loaded:
    url: str
    result: ScenarioResult

    @property
    def parent(self) -> str:
        return next(s.live_id for s in self.result.sessions if s.kind == "primary" and s.live_id)

    def child(self, kind: str) -> str:
        return next(s.live_id for s in self.result.sessions if s.kind == kind and s.live_id)


@pytest.fixture(scope="session")
def mixed_store(tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    url = store_url(tmp_path_factory.mktemp("ui-store"))
    result = replay_subagent_mixed(url)
    add_hostile(url)
    return Loaded(url, result)


@pytest.fixture
def client(mixed_store: Loaded) -> Iterator[TestClient]:
    app = create_app(lambda: open_store(mixed_store.url), label=mixed_store.url, poll_interval=0.02)
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "artifacts"

"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scopes import make_scheduler

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT.parent / "shared" / "fixtures" / "dsh-upstream"

SLOW = {
    "tests/temporal": "a Temporal dev server and dsh worker processes",
    "tests/acp/test_upstream.py": "32 `dsh acp` processes replaying the original's recordings",
    "tests/ui/test_browser.py": "chromium",
    "tests/ui/test_rough_edges.py": "chromium",
    "tests/cli/test_make_run.py": "`make run` in a fresh process",
    "tests/cli/test_misleading_errors.py": "pytest in a subprocess",
    "tests/mcp/test_plugin_live_mcp.py": "pytest in a subprocess",
    "tests/redact/test_plugin_records.py": "pytest in a subprocess",
    "tests/replay/test_fixture.py": "pytest in a subprocess",
    "tests/replay/test_fixture_failures.py": "pytest in a subprocess",
    "tests/serve/test_dialects_fixture.py": "pytest in a subprocess",
    "tests/serve/test_pytest_fixture.py": "pytest in a subprocess",
}
"""What ``make test-quick`` leaves out (marked ``slow`` here), and why each is slow."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        try:
            where = item.path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            continue
        if any(where == path or where.startswith(path + "/") for path in SLOW):
            item.add_marker(pytest.mark.slow)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadfile``, the work units of :mod:`tests.scopes` (else xdist's own)."""
    return make_scheduler(config, log) if config.getvalue("dist") == "loadfile" else None


@pytest.fixture
def upstream() -> Path:
    """The original's recorded logs; skipped with a reason only when the folder is absent."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"upstream fixtures not found at {UPSTREAM} (CI always has them)")
    return UPSTREAM

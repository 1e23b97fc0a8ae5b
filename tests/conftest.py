"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT.parent / "shared" / "fixtures" / "dsh-upstream"


@pytest.fixture
def upstream() -> Path:
    """The original's recorded logs; skipped with a reason only when the folder is absent."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"upstream fixtures not found at {UPSTREAM} (CI always has them)")
    return UPSTREAM

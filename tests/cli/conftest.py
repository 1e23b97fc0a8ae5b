"""Fixtures for CLI tests: run ``python -m dsh.cli`` as a real subprocess against a temp store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class Result:
    """One finished ``dsh`` process."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.code == 0, f"dsh {' '.join(self.args)} failed ({self.code}): {self.stderr}"
        return json.loads(self.stdout)

    def ok(self) -> Result:
        assert self.code == 0, f"dsh {' '.join(self.args)} failed ({self.code}): {self.stderr}"
        assert "Traceback" not in self.stderr
        return self


class Dsh:
    """Runs the CLI in a subprocess with ``DSH_STORE`` pointing at ``store``."""

    def __init__(self, store: str, home: Path) -> None:
        self.store = store
        self.env = {
            **os.environ,
            "DSH_STORE": store,
            "XDG_DATA_HOME": str(home / "data"),
            "NO_COLOR": "1",
            "PYTHONUTF8": "1",
        }

    def __call__(self, *args: str | os.PathLike[str], store: str | None = None) -> Result:
        env = dict(self.env)
        if store is not None:
            env["DSH_STORE"] = store
        argv = tuple(str(a) for a in args)
        proc = subprocess.run(
            [sys.executable, "-m", "dsh.cli", *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return Result(argv, proc.returncode, proc.stdout, proc.stderr)

    def many(self, *calls: Sequence[str | os.PathLike[str]]) -> list[Result]:
        """Run independent invocations concurrently (each is its own process); results in order."""
        with ThreadPoolExecutor(max_workers=8) as pool:
            return list(pool.map(lambda args: self(*args), calls))


def store_url(kind: str, root: Path) -> str:
    """A fresh store URL of ``kind`` (``sqlite`` or ``jsonl``) under ``root``."""
    return f"sqlite:{root / 'sessions.db'}" if kind == "sqlite" else f"jsonl:{root / 'sessions'}"


@pytest.fixture(params=["sqlite", "jsonl"])
def dsh(request: pytest.FixtureRequest, tmp_path: Path) -> Dsh:
    """The CLI bound to a fresh store, once per store kind."""
    return Dsh(store_url(request.param, tmp_path / "store"), tmp_path)


@pytest.fixture
def dsh_sqlite(tmp_path: Path) -> Dsh:
    """The CLI bound to a fresh SQLite store (for tests where the backend does not matter)."""
    return Dsh(store_url("sqlite", tmp_path / "store"), tmp_path)


def assert_user_error(result: Result, *names: str) -> str:
    """Exit != 0, exactly one stderr line ``dsh: error: ...`` naming every one of ``names``."""
    assert result.code != 0, f"expected failure, got 0: {result.stdout}"
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("dsh: error: "), line
    for name in names:
        assert name in line, f"{name!r} not named in {line!r}"
    return line


def raw_type_counts(path: Path) -> Counter[str]:
    """Event types of a log file counted straight from its lines, packed rows expanded.

    Independent of dsh's codecs: a ``text-chunks`` / ``reasoning-chunks`` row stands for
    ``len(texts)`` ``assistant/chunk`` events, a ``tool-call-chunks`` row for ``len(args)``.
    """
    counts: Counter[str] = Counter()
    lines = path.read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        row = json.loads(line)
        if row["type"] in ("text-chunks", "reasoning-chunks"):
            counts["assistant/chunk"] += len(row["data"]["texts"])
        elif row["type"] == "tool-call-chunks":
            counts["assistant/chunk"] += len(row["data"]["args"])
        else:
            counts[row["type"]] += 1
    return counts

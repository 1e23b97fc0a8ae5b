"""The original's fs-search snapshot workspace (``prepareFsSearchWorkspace``), for the replay
of ``fs-glob-sampling``: eight files holding ``fixture\\n`` under ``tree/``, modified in a fixed
order one millisecond apart from 2000-01-01 00:00:00.001 local time, so ``glob`` (oldest
first) lists and samples them as the recording did."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Final

GLOB_TREE: Final = (
    "archive/a.ts",
    "archive/b.ts",
    "archive/c.ts",
    "docs/guide.md",
    "src/index.ts",
    "test/spec.ts",
    "top.txt",
    "notes.md",
)
"""The files under ``tree/``, oldest first."""


def prepare_glob_tree(cwd: Path) -> None:
    """Write ``cwd/tree`` as the original's harness does (its mtimes included)."""
    start_ns = int(time.mktime((2000, 1, 1, 0, 0, 0, 0, 0, -1))) * 1_000_000_000  # local time
    for i, name in enumerate(GLOB_TREE, start=1):
        path = cwd / "tree" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("fixture\n")
        stamp = start_ns + i * 1_000_000
        os.utime(path, ns=(stamp, stamp))

"""The documentation site builds with `mkdocs build --strict` (a broken link or anchor, or a page
missing from the nav, fails it) and offline: no network is reached, no web font is referenced.
About 2 s of build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tools.mkdocs_hooks import MARKER

ROOT = Path(__file__).resolve().parents[2]


def _without_network() -> list[str]:
    """A prefix running a command in a new, empty network namespace, where the host allows it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    for prefix in ([unshare, "-n"], [unshare, "-rn"]):  # root; else an unprivileged user namespace
        if subprocess.run([*prefix, "true"], capture_output=True, check=False).returncode == 0:
            return prefix
    return []


def test_the_site_builds_strict_and_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    argv = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "-f",
        str(ROOT / "mkdocs.yml"),
        "-d",
        str(site),
    ]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [*_without_network(), *argv], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stderr, built.stderr

    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    docs = {
        p.relative_to(ROOT / "docs").with_suffix(".html").as_posix() for p in (ROOT / "docs").rglob("*.md")
    }
    assert docs <= pages  # every Markdown file under docs/ is a page
    assert {"index.html", "guide/replay.html", "reference/cli/run.html", "threat-model.html"} <= pages

    decisions = (site / "decisions" / "index.html").read_text(encoding="utf-8")
    assert MARKER not in decisions
    for note in (ROOT / "docs" / "decisions").glob("2*.md"):
        assert f'href="{note.stem}.html"' in decisions, note.name  # listed without a line in mkdocs.yml

    home = (site / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in home and "fonts.gstatic.com" not in home
    assert (site / "search" / "search_index.js").is_file()  # the offline plugin: search from file://

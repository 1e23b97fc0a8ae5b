"""MkDocs hooks (``hooks:`` in mkdocs.yml): folders whose pages join the nav without a line each.

A decision note added to ``docs/decisions/`` or a CLI page written by ``tools/gen_cli_docs.py``
into ``docs/reference/cli/`` needs no line in mkdocs.yml: at build time it is appended to its
nav section (by file name), and each decision note is listed on ``decisions/index.md`` (in
place of the marker below). Nothing here reaches the network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DECISIONS = "decisions"
FOLDERS = {"Decisions": DECISIONS, "Commands": "reference/cli"}
"""Nav section title -> the folder under docs/ whose every page it holds."""
MARKER = "<!-- decision notes: listed at build time by tools/mkdocs_hooks.py -->"


def _pages(docs_dir: Path, folder: str) -> list[Path]:
    return sorted(p for p in (docs_dir / folder).glob("*.md") if p.name != "index.md")


def _title(note: Path) -> str:
    first = note.read_text(encoding="utf-8").split("\n", 1)[0]
    return first.removeprefix("# ").strip() if first.startswith("# ") else note.stem


def _section(nav: Any, title: str) -> list[Any] | None:
    """The list under the nav entry called ``title``, wherever it is nested."""
    if isinstance(nav, list):
        for item in nav:
            found = _section(item, title)
            if found is not None:
                return found
    elif isinstance(nav, dict):
        for name, value in nav.items():
            if name == title and isinstance(value, list):
                return value
            found = _section(value, title)
            if found is not None:
                return found
    return None


def on_config(config: Any) -> Any:
    docs_dir = Path(config["docs_dir"])
    for title, folder in FOLDERS.items():
        section = _section(config["nav"], title)
        if section is None:
            raise ValueError(f'mkdocs.yml: the nav needs a "{title}" section (a list) for docs/{folder}/')
        listed = {entry for entry in section if isinstance(entry, str)}
        section.extend(
            path for page in _pages(docs_dir, folder) if (path := f"{folder}/{page.name}") not in listed
        )
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != f"{DECISIONS}/index.md":
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/{DECISIONS}/index.md lost its marker line: {MARKER}")
    rows = [
        f"- `{note.stem[:10]}` [{_title(note)}]({note.name})"
        for note in _pages(Path(config["docs_dir"]), DECISIONS)
    ]
    return markdown.replace(MARKER, "\n".join(rows))

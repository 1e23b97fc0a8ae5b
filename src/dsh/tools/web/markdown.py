"""HTML → Markdown for ``web_fetch``, in the shape the original's turndown setup writes.

markdownify (MIT; ``docs/decisions/2026-12-02-web-fetch.md``) with the original's choices:
ATX headings, fenced code blocks, ``-`` bullets followed by three spaces (turndown's list
prefix), ``**strong**`` and ``_emphasis_``, ``script``/``style``/``noscript`` dropped with
their contents, and GFM tables whose cells are trimmed, ``<br>`` for newlines, ``\\|`` for
pipes and padded to at least three characters. HTML nested deeper than 512 elements, or
that the converter cannot handle, is passed through raw.
"""

from __future__ import annotations

import re
from typing import Any, cast

from bs4 import BeautifulSoup, Tag
from markdownify import ATX, MarkdownConverter

MAX_DEPTH = 512
_DROPPED = ("script", "style", "noscript", "template")
_PIPES = re.compile(r"\|+")
_BLANKS = re.compile(r"\n{3,}")


def _depth(soup: BeautifulSoup) -> int:
    deepest = 0
    for tag in soup.find_all(True):
        deepest = max(deepest, sum(1 for _ in tag.parents))
        if deepest > MAX_DEPTH:
            break
    return deepest


def _alignment(cell: Tag) -> str:
    align = str(cell.get("align") or "").lower()
    style = str(cell.get("style") or "").lower().replace(" ", "")
    for value in ("left", "right", "center"):
        if f"text-align:{value}" in style:
            align = value
    return {"left": ":---", "right": "---:", "center": ":---:"}.get(align, "---")


class _Converter(MarkdownConverter):
    def convert_em(self, el: Any, text: str, parent_tags: Any) -> str:
        return self._wrap(text, "_")

    convert_i = convert_em

    def convert_strong(self, el: Any, text: str, parent_tags: Any) -> str:
        return self._wrap(text, "**")

    convert_b = convert_strong

    @staticmethod
    def _wrap(text: str, mark: str) -> str:
        stripped = text.strip()
        if not stripped:
            return text
        lead = " " if text[:1].isspace() else ""
        trail = " " if text[-1:].isspace() else ""
        return f"{lead}{mark}{stripped}{mark}{trail}"

    def convert_li(self, el: Any, text: str, parent_tags: Any) -> str:
        text = (text or "").strip()
        parent = el.parent
        if parent is not None and parent.name == "ol":
            start = int(parent.get("start")) if str(parent.get("start") or "").isdigit() else 1
            prefix = f"{start + len(el.find_previous_siblings('li'))}.  "
        else:
            prefix = "-   "
        body = text.replace("\n", "\n    ")
        return f"{prefix}{body}\n"

    def convert_table(self, el: Any, text: str, parent_tags: Any) -> str:
        rows = [r for r in el.find_all("tr") if r.find_parent("table") is el]
        lines: list[str] = []
        for n, row in enumerate(rows):
            cells = row.find_all(["td", "th"], recursive=False)
            texts = []
            for i, cell in enumerate(cells):
                content = str(cast(Any, self).process_tag(cell, parent_tags={"td", "_inline"})).strip()
                content = _PIPES.sub(lambda m: "\\" + m.group(0), content.replace("\n", "<br>"))
                texts.append(("| " if i == 0 else " ") + content.ljust(3) + " |")
            lines.append("".join(texts))
            heading = row.find_parent("thead") is not None or (n == 0 and all(c.name == "th" for c in cells))
            if heading and n == 0:
                marks = [("| " if i == 0 else " ") + _alignment(c) + " |" for i, c in enumerate(cells)]
                lines.append("".join(marks))
        return "\n\n" + "\n".join(lines) + "\n\n"

    def convert_thead(self, el: Any, text: str, parent_tags: Any) -> str:
        return text

    convert_td = convert_thead  # a cell's own content: convert_table lays the row out
    convert_th = convert_thead
    convert_tr = convert_thead

    convert_tbody = convert_thead
    convert_tfoot = convert_thead


def html_to_markdown(html: str) -> str:
    """The page as Markdown (raw when too deep or not convertible)."""
    try:
        soup = BeautifulSoup(html, "html.parser")
        if _depth(soup) > MAX_DEPTH:
            return html
        for tag in soup.find_all(_DROPPED):
            tag.decompose()
        converter = _Converter(heading_style=ATX, code_language="", bullets="-", escape_underscores=False,
                               escape_asterisks=False, escape_misc=False)  # fmt: skip
        text = str(converter.convert_soup(soup))
    except (RecursionError, ValueError, TypeError, AttributeError):
        return html
    lines = [line.rstrip() if not line.endswith("  ") else line for line in text.split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip("\n")

"""Count raw event-payload digs and event-type switches in the read-side front-ends.

The measure of issue 34 (one read model): how often ``dsh.cli``, ``dsh.acp``, ``dsh.ui``,
``dsh.snapshot`` and ``dsh.serve`` reach into an event's raw payload or switch on its type
string themselves instead of rendering :mod:`dsh.session.timeline` items. AST-based, so
text inside string literals (templates, docstrings) does not count.

- a *dig* is a source line reading ``<event>.data`` or ``<event>.payload`` — ``<event>`` a
  name like ``event`` / ``e`` / ``ev`` (or ``….event`` / ``….raw``);
- a *switch* is a comparison (``==``, ``!=``, ``in``, ``not in``) of ``<event>.type`` (or a
  local ``etype``) with an event-type string literal or a vocabulary constant, a ``case``
  on such a literal, or a dict keyed by event-type literals. Literal and constant switches
  are reported apart (the issue's figure counts literals).

Run: ``python bench/read_model_counts.py [ROOT]`` (ROOT: the project, default the cwd).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

from dsh.events.vocabulary import KNOWN_TYPES

PACKAGES = ("cli", "acp", "ui", "snapshot", "serve")
EVENTISH = frozenset({"event", "e", "ev", "evt", "raw"})
TYPE_NAMES = frozenset({"etype", "event_type"})


def _is_event(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in EVENTISH
    return isinstance(node, ast.Attribute) and node.attr in ("event", "raw")


def _is_type(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in TYPE_NAMES
    return isinstance(node, ast.Attribute) and node.attr == "type" and _is_event(node.value)


def _type_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in KNOWN_TYPES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_type_literal(e) for e in node.elts)
    return False


def _vocab_constant(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id.isupper() and len(node.id) > 3
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_vocab_constant(e) for e in node.elts)
    return False


def count_file(path: Path) -> tuple[set[int], Counter[str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    digs: set[int] = set()
    switches: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("data", "payload") and _is_event(node.value):
            digs.add(node.lineno)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_type(s) for s in sides):
                others = [s for s in sides if not _is_type(s)]
                if any(_type_literal(s) for s in others):
                    switches["literal"] += 1
                elif any(_vocab_constant(s) for s in others):
                    switches["constant"] += 1
        elif isinstance(node, ast.match_case):
            pattern = node.pattern
            if isinstance(pattern, ast.MatchValue) and _type_literal(pattern.value):
                switches["literal"] += 1
        elif isinstance(node, ast.Dict) and any(k is not None and _type_literal(k) for k in node.keys):
            switches["literal"] += 1
    return digs, switches


def main(root: Path) -> None:
    total_digs = 0
    total: Counter[str] = Counter()
    for package in PACKAGES:
        digs_n = 0
        counts: Counter[str] = Counter()
        for path in sorted((root / "src" / "dsh" / package).rglob("*.py")):
            digs, switches = count_file(path)
            digs_n += len(digs)
            counts += switches
        total_digs += digs_n
        total += counts
        _row(package, digs_n, counts)
    _row("total", total_digs, total)


def _row(name: str, digs: int, counts: Counter[str]) -> None:
    literal, constant = counts["literal"], counts["constant"]
    print(f"{name:9} digs {digs:3}   switches literal {literal:3} constant {constant:3}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())

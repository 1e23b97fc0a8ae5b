"""Every JSON dsh writes goes through ``dsh.jsonx`` (one home for canonical JSON and its variants)."""

from __future__ import annotations

import re
from pathlib import Path

import dsh

_SERIALIZE = re.compile(r"\b(?:orjson|json)\.dumps?\(|\bJSONEncoder\b|\bOPT_(?:INDENT|SORT_KEYS)")


def test_no_module_but_jsonx_serializes_json() -> None:
    root = Path(dsh.__file__).parent
    home = root / "jsonx.py"
    assert _SERIALIZE.search(home.read_text())  # the pattern does find a serializer
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        if path != home
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _SERIALIZE.search(line)
    ]
    assert offenders == []

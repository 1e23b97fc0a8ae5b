"""``dsh scenario save`` takes an id as every other command does: a unique prefix works, an
ambiguous one is one line naming the candidates (exit 2), an unknown one the not-found line;
the saved scenario replays strictly."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Dsh, assert_user_error
from .test_everyday_sessions_cli import ROOT, SPAWN, _import_mixed


def test_save_accepts_a_unique_prefix_and_the_scenario_replays(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    _import_mixed(dsh_sqlite)
    target = tmp_path / "saved"
    saved = dsh_sqlite("scenario", "save", ROOT[:6], str(target)).ok()
    assert f"saved {ROOT} as {target}" in saved.stdout, "the full id it resolved to"
    header = json.loads((target / "session.jsonl").read_text().splitlines()[0])
    assert header["id"] == ROOT
    assert sorted(p.name for p in target.glob("session*.jsonl")) == [
        "session.1.jsonl",
        "session.2.jsonl",
        "session.jsonl",
    ]
    dsh_sqlite("replay", str(target), "--trust", "--json").ok()


def test_save_refuses_an_ambiguous_or_unknown_prefix_in_one_line(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    _import_mixed(dsh_sqlite)
    dsh_sqlite("sessions", "fork", ROOT, "--id", ROOT[:9] + "other").ok()  # shares a 9-char prefix
    ambiguous = dsh_sqlite("scenario", "save", ROOT[:4], str(tmp_path / "a"))
    line = assert_user_error(ambiguous, "ambiguous", ROOT, ROOT[:9] + "other")
    assert ambiguous.code == 2 and line.count(",") == 1
    assert_user_error(dsh_sqlite("scenario", "save", "zzz", str(tmp_path / "b")), "zzz", "not found")
    child = dsh_sqlite("scenario", "save", SPAWN[:8], str(tmp_path / "c"))
    assert_user_error(child, SPAWN, "top-level")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()

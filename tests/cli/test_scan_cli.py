"""``dsh scenario scan``: unredacted secrets by file and line, never their values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.cli.conftest import Dsh, assert_user_error

SCENARIOS = Path(__file__).resolve().parents[2] / "src" / "dsh" / "snapshot" / "scenarios"
AWS = "AKIAIOSFODNN7EXAMPLE"


def test_a_clean_recording_passes(dsh_sqlite: Dsh) -> None:
    result = dsh_sqlite("scenario", "scan", *sorted(p for p in SCENARIOS.iterdir() if p.is_dir()))
    assert result.code == 0, result.stdout
    assert result.stdout == "" and "no unredacted secrets" in result.stderr


def test_a_planted_key_is_named_by_file_line_and_kind(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    scenario = tmp_path / "leaky"
    shutil.copytree(SCENARIOS / "tool-call-turn", scenario)
    log = scenario / "session.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace("SNAPSHOT_OK", f"SNAPSHOT_OK {AWS}")
    assert AWS in lines[3]
    log.write_text("".join(lines))
    (scenario / "workspace").mkdir(exist_ok=True)
    (scenario / "workspace" / "blob.bin").write_bytes(b"\0" + AWS.encode())  # binary: skipped
    result = dsh_sqlite("scenario", "scan", scenario)
    assert result.code == 1
    assert result.stdout.splitlines() == [f"{log}:4: aws-access-key"]
    assert AWS not in result.stdout + result.stderr
    document = json.loads(dsh_sqlite("scenario", "scan", scenario, "--json").stdout)
    assert document["clean"] is False and document["findings"][0]["kind"] == "aws-access-key"


def test_environment_secrets_and_the_scenarios_own_regexes(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    scenario = tmp_path / "custom"
    scenario.mkdir()
    (scenario / "input.json").write_text(json.dumps({"steps": [], "replay": {"redact": [r"ACME-\d{6}"]}}))
    (scenario / "notes.txt").write_text("ticket ACME-123456\nmy token tok-0123456789\n")
    dsh_sqlite.env["TEAM_TOKEN"] = "tok-0123456789"
    result = dsh_sqlite("scenario", "scan", scenario)
    assert result.code == 1
    assert result.stdout.splitlines() == [
        f"{scenario / 'notes.txt'}:1: custom",
        f"{scenario / 'notes.txt'}:2: env",
    ]
    assert "tok-0123456789" not in result.stdout


def test_bad_input(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    assert_user_error(dsh_sqlite("scenario", "scan", tmp_path / "missing"), "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "input.json").write_text('{"replay": {"redact": ["(unclosed"]}}')
    assert_user_error(dsh_sqlite("scenario", "scan", bad), "(unclosed")

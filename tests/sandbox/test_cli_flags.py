"""``dsh run --sandbox`` / ``--network``: bad values are usage errors (exit 2) before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dsh.cli.app import app


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--sandbox", "full"],
            "--sandbox full: expected one of read-only, workspace-write, danger-full-access",
        ),
        (["--network", "maybe"], "--network maybe: expected on or off"),
    ],
)
def test_bad_sandbox_flags_are_usage_errors(tmp_path: Path, flags: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["run", "hi", "--cwd", str(tmp_path), *flags])
    assert result.exit_code == 2
    assert message in result.output

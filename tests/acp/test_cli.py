"""``dsh acp`` refuses to serve without what it needs: one line on stderr, exit 2, nothing on stdout."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.acp.wire import SERVER, TIMEOUT, server_env


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVER, *args],
        input="",
        capture_output=True,
        text=True,
        env=server_env(),
        cwd=cwd,
        timeout=TIMEOUT,
        check=False,
    )


def test_missing_key_exits_2_before_serving(tmp_path: Path) -> None:
    done = run("--store", f"sqlite:{tmp_path / 's.db'}", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsh: error: no API key")
    assert not (tmp_path / "s.db").exists()


def test_bad_replay_directory_and_log_file_exit_2(tmp_path: Path) -> None:
    missing = run("--replay", str(tmp_path / "nope"), "--store", "memory:", cwd=tmp_path)
    assert (missing.returncode, missing.stdout) == (2, "")
    assert "is not a directory" in missing.stderr and len(missing.stderr.splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    unrecorded = run("--replay", str(empty), "--store", "memory:", cwd=tmp_path)
    assert (unrecorded.returncode, unrecorded.stdout) == (2, "")
    assert "session.jsonl is missing" in unrecorded.stderr
    bad_log = run("--replay", str(empty), "--log-file", str(tmp_path / "no" / "log"), cwd=tmp_path)
    assert (bad_log.returncode, bad_log.stdout) == (2, "")
    assert bad_log.stderr.startswith("dsh: error: --log-file")

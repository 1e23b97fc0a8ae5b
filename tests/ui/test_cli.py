"""``dsh ui`` as a process: prints its URL, serves, stops on SIGINT; bad options fail in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.patience import HTTP_TIMEOUT, get_when_up, patience
from tests.ui.conftest import Loaded

DSH = [sys.executable, "-m", "dsh.cli"]


def test_dsh_ui_prints_a_localhost_url_and_serves(mixed_store: Loaded, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text("<!doctype html><p>a saved report</p>", encoding="utf-8")
    proc = subprocess.Popen(
        [*DSH, "ui", "--store", mixed_store.url, "--port", "0", "--report", str(report)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("dsh ui: serving ") and " at http://127.0.0.1:" in line, line
        url = line.split(" at ", 1)[1].split(" ", 1)[0]
        page = get_when_up(url)
        assert page.status_code == 200 and mixed_store.parent in page.text
        assert "a saved report" in httpx.get(url + "report", timeout=HTTP_TIMEOUT).text
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=patience(30))
    assert proc.returncode == 0


def test_bad_options_fail_in_one_line(tmp_path: Path) -> None:
    bad_port = subprocess.run([*DSH, "ui", "--port", "70000"], capture_output=True, text=True, check=False)
    assert bad_port.returncode == 2 and "--port 70000: not a port number" in bad_port.stderr
    missing = tmp_path / "nope.html"
    bad_report = subprocess.run(
        [*DSH, "ui", "--store", "memory:", "--report", str(missing)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad_report.returncode == 2 and f"--report {missing}: cannot read it" in bad_report.stderr

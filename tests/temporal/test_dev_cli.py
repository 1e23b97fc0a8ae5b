"""``dsh temporal dev`` stops the server it started when it is stopped itself: SIGTERM (a
service manager, ``kill``) and SIGINT (Ctrl-C) alike leave nothing listening on its port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.temporal.conftest import free_port


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _until(check: object, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_stopping_dsh_temporal_dev_stops_its_server(stop: signal.Signals) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsh.cli", "temporal", "dev", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert _until(lambda: _listening(port), 60), "the dev server never listened"
        proc.send_signal(stop)  # dsh only, not its process group
        _, err = proc.communicate(timeout=30)
        assert _until(lambda: not _listening(port), 30), "the dev server outlived dsh temporal dev"
        assert "Traceback" not in err, err
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
        proc.communicate(timeout=10)

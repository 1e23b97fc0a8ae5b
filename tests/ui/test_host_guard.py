"""``dsh ui`` answers only its own names (issue 36, items 5 and 6): DNS rebinding and cross-origin pages.

The real ``dsh ui`` process on 127.0.0.1, raw requests: a ``Host`` naming another site gets
421 with a one-line body and no session data, a foreign ``Origin`` 403; loopback names,
``--allow-host`` names and same-origin requests are served. One stderr line per refusal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.patience import HTTP_TIMEOUT, patience
from tests.rawhttp import body, build, exchange, status
from tests.ui.conftest import Loaded

DSH = [sys.executable, "-m", "dsh.cli"]


def _start(store: str, *extra: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [*DSH, "ui", "--store", store, "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " at http://127.0.0.1:" in line, line
    port = int(line.split(" at http://127.0.0.1:", 1)[1].split("/", 1)[0])
    deadline = time.monotonic() + patience(60)
    while time.monotonic() < deadline:  # uvicorn starts serving a moment after the line
        try:
            if status(exchange(port, build("GET", "/static/ui.css", host="127.0.0.1"), timeout=HTTP_TIMEOUT)):
                break
        except OSError:
            pass
        time.sleep(0.05)
    return proc, port


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=patience(30))
    return err


@pytest.mark.parametrize("path", ["/", "/api/sessions", "/s/{parent}", "/api/sessions/{parent}"])
def test_a_rebound_host_gets_421_and_no_session(mixed_store: Loaded, path: str) -> None:
    proc, port = _start(mixed_store.url)
    try:
        target = path.format(parent=mixed_store.parent)
        replies = [
            exchange(port, build("GET", target, host=host.format(port=port)))
            for host in ("evil.example:{port}", "evil.example", "127.0.0.1.nip.io:{port}")
        ]
        served = exchange(port, build("GET", target, host=f"127.0.0.1:{port}"))
    finally:
        err = _stop(proc)
    for reply in replies:
        assert status(reply) == 421, reply[:300]
        assert body(reply).count(b"\n") == 1 and b"is not this server" in body(reply)
        assert mixed_store.parent.encode() not in reply
    assert status(served) == 200 and mixed_store.parent.encode() in served
    lines = [line for line in err.splitlines() if line.startswith("dsh ui: refused 421")]
    assert len(lines) == 3 and "Traceback" not in err, err


def test_loopback_names_and_allowed_hosts_are_served(mixed_store: Loaded) -> None:
    proc, port = _start(mixed_store.url, "--allow-host", "viewer.test", "--allow-host", "gw.test:8443")
    try:
        got = {
            host: status(exchange(port, build("GET", "/api/sessions", host=host.format(port=port))))
            for host in (
                "127.0.0.1:{port}",
                "localhost:{port}",
                "[::1]:{port}",
                "localhost",
                "viewer.test",
                "viewer.test:{port}",
                "gw.test:8443",
                "gw.test:8444",
            )
        }
    finally:
        _stop(proc)
    assert got == {
        "127.0.0.1:{port}": 200,
        "localhost:{port}": 200,
        "[::1]:{port}": 200,
        "localhost": 200,
        "viewer.test": 200,
        "viewer.test:{port}": 200,
        "gw.test:8443": 200,
        "gw.test:8444": 421,
    }


def test_a_foreign_origin_gets_403_and_the_own_origin_is_served(mixed_store: Loaded) -> None:
    proc, port = _start(mixed_store.url)
    try:
        host = f"127.0.0.1:{port}"
        foreign = [
            status(exchange(port, build("GET", "/api/sessions", host=host, headers=[("Origin", o)])))
            for o in ("http://evil.example", "null", f"http://localhost:{port + 1}")
        ]
        own = status(
            exchange(port, build("GET", "/api/sessions", host=host, headers=[("Origin", f"http://{host}")]))
        )
        live = exchange(
            port,
            build(
                "GET",
                f"/s/{mixed_store.parent}/live?from=0",
                host=host,
                headers=[("Origin", "http://evil.example")],
            ),
        )
    finally:
        err = _stop(proc)
    assert foreign == [403, 403, 403] and own == 200
    assert status(live) == 403 and b"event:" not in live
    assert len([line for line in err.splitlines() if "refused 403" in line]) == 4, err


def test_a_bad_allow_host_fails_in_one_line() -> None:
    done = subprocess.run(
        [*DSH, "ui", "--store", "memory:", "--allow-host", "a b"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--allow-host" in done.stderr


def test_a_head_never_finished_is_closed_and_bad_input_gets_400(mixed_store: Loaded) -> None:
    import socket

    from tests.rawhttp import read_all

    proc, port = _start(mixed_store.url, "--header-timeout", "0.5")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and nothing more
            slow = read_all(sock)  # the viewer closes it (a recv timeout would fail the test)
        bad = [
            status(
                exchange(port, f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {n}\r\n\r\n".encode())
            )
            for n in ("abc", "-1")
        ]
        after = status(exchange(port, build("GET", "/api/sessions", host="127.0.0.1")))
    finally:
        err = _stop(proc)
    assert slow == b"" and bad == [400, 400] and after == 200
    assert len([line for line in err.splitlines() if "no complete request within 0.5 s" in line]) == 1, err
    assert "Traceback" not in err, err


def _low_fd_limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def test_out_of_file_descriptors_is_one_line_and_the_viewer_recovers(mixed_store: Loaded) -> None:
    import socket

    proc = subprocess.Popen(
        [*DSH, "ui", "--store", mixed_store.url, "--port", "0", "--header-timeout", "0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_low_fd_limit,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " at http://127.0.0.1:" in line, line + (proc.stderr.read() if proc.stderr else "")
    port = int(line.split(" at http://127.0.0.1:", 1)[1].split("/", 1)[0])
    # One connection from each of 100 addresses: none over its address's cap, so the viewer
    # runs out of descriptors (100 from one address: the test below).
    held = [
        socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(f"127.0.0.{2 + n}", 0))
        for n in range(100)
    ]
    try:
        time.sleep(4)  # the viewer accepts until out of descriptors; asyncio retries every second
    finally:
        for sock in held:
            sock.close()
    try:
        deadline = time.monotonic() + patience(30)
        while True:
            try:
                reply = exchange(port, build("GET", "/api/sessions", host="127.0.0.1"), timeout=HTTP_TIMEOUT)
                if status(reply) == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the viewer did not recover"
            time.sleep(0.2)
    finally:
        err = _stop(proc)
    assert "Traceback" not in err, err[:3000]
    assert len([line for line in err.splitlines() if "accept" in line]) == 1, err[:3000]


def test_idle_connections_from_one_address_do_not_lock_a_request_out(mixed_store: Loaded) -> None:
    """Issue 46 item 6a: 100 idle connections from 127.0.0.1, more than 64 descriptors hold,
    and a request on a new connection is still answered long before the 30 s head timeout
    would free one (the exchange gives up after 10 s): over the address's cap the viewer
    closes its longest-idle connection, the first one opened."""
    import socket

    proc = subprocess.Popen(
        [*DSH, "ui", "--store", mixed_store.url, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_low_fd_limit,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " at http://127.0.0.1:" in line, line + (proc.stderr.read() if proc.stderr else "")
    port = int(line.split(" at http://127.0.0.1:", 1)[1].split("/", 1)[0])
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(100)]
    try:
        reply = exchange(port, build("GET", "/api/sessions", host="127.0.0.1"), timeout=10)
        first_closed = held[0].recv(1) == b""  # EOF, not the 10 s timeout
    finally:
        for sock in held:
            sock.close()
        err = _stop(proc)
    assert status(reply) == 200 and first_closed, err[:3000]
    assert "Traceback" not in err, err[:3000]
    assert len([line for line in err.splitlines() if "closed an idle connection" in line]) == 1, err[:3000]

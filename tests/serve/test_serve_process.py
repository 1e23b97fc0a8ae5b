"""``dsh serve`` as the user runs it, attacked over raw sockets: one log line per refusal, no traceback.

Issue 36, items 5-7: the real ``dsh serve replay`` / ``record`` process with a short
``--header-timeout`` and a small ``--max-body``; a bad, negative or huge ``Content-Length``,
a head never finished, a foreign ``Host``, a cross-origin or tokenless shutdown — each is
refused (the server keeps serving) with exactly one line on stderr; out of file descriptors,
``accept()`` failing is logged once and the server recovers. Issue 46 item 6a: idle
connections, from one address or from many, never lock a request out.
"""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.patience import patience
from tests.rawhttp import build, exchange, read_all, status
from tests.serve.helpers import SCENARIOS, control, start_serve, stop

TOOL_TURN = SCENARIOS / "tool-call-turn"
CHAT = "/v1/chat/completions"


def _port(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1].split("/")[0])


def _attacks(port: int, token: str) -> list[int]:
    """Each attack's status; the server must answer every one and keep serving."""
    host = f"127.0.0.1:{port}"
    got = []
    for length in ("abc", "-1"):
        got.append(
            status(
                exchange(
                    port,
                    f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {length}\r\n\r\n{{}}".encode(),
                )
            )
        )
    got.append(
        status(
            exchange(
                port, f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {300 << 20}\r\n\r\n".encode()
            )
        )
    )
    got.append(status(exchange(port, build("POST", CHAT, host=host, body=b"x" * 4096))))  # over --max-body 1K
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\n".encode())  # never finished
        got.append(status(read_all(sock)))
    got.append(status(exchange(port, build("GET", "/_dsh/report", host=f"evil.example:{port}",
                                           headers=[("X-Dsh-Token", token)]))))  # fmt: skip
    cross = [("Origin", "http://evil.example"), ("X-Dsh-Token", token)]
    got.append(status(exchange(port, build("POST", "/_dsh/shutdown", host=host, headers=cross))))
    got.append(status(exchange(port, build("POST", "/_dsh/shutdown", host=host))))
    return got


EXPECTED = [400, 400, 413, 413, 408, 421, 403, 403]


def _refusal_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("dsh serve") and "refused" in line]


def test_dsh_serve_replay_refuses_each_attack_in_one_line_without_a_traceback() -> None:
    process, base_url, token = start_serve(
        "replay", str(TOOL_TURN), "--header-timeout", "0.5", "--max-body", "1K", "--allow-unconsumed"
    )
    try:
        got = _attacks(_port(base_url), token)
        assert control(base_url, "report", token)["sessions"][0]["served"] == 0  # still serving
        control(base_url, "shutdown", token, method="POST")
    finally:
        _, err = stop(process)
    assert got == EXPECTED, err
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert len(_refusal_lines(err)) == len(EXPECTED), err
    assert len(err.splitlines()) == len(EXPECTED), err


def test_dsh_serve_record_refuses_each_attack_before_the_upstream(tmp_path: Path) -> None:
    with OpenAICompatServer([stream_reply(text=["ok"])]) as upstream:
        process, base_url, token = start_serve(
            "record", str(tmp_path / "rec"), "--upstream", upstream.base_url,
            "--header-timeout", "0.5", "--max-body", "1K",
        )  # fmt: skip
        try:
            got = _attacks(_port(base_url), token)
            control(base_url, "shutdown", token, method="POST")
        finally:
            _, err = stop(process)
        assert upstream.requests == []
    assert got == EXPECTED, err
    assert "Traceback" not in err and len(_refusal_lines(err)) == len(EXPECTED), err


def _few_descriptors(limit: int) -> Callable[[], None]:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return limited


def _start_with_few_descriptors(limit: int) -> tuple[subprocess.Popen[str], str, str]:
    """``dsh serve replay`` (the default 30 s head timeout) under ``RLIMIT_NOFILE`` ``limit``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dsh.cli", "serve", "replay", str(TOOL_TURN), "--allow-unconsumed"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_few_descriptors(limit),
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    if " on http://" not in line:
        _, err = stop(process)
        pytest.fail(f"dsh serve did not start under RLIMIT_NOFILE {limit}: {line!r} {err}")
    token = process.stdout.readline().split("control token ", 1)[1].split()[0]
    return process, line.strip().rsplit(" on ", 1)[1], token


def test_idle_connections_from_one_address_do_not_lock_a_request_out() -> None:
    """Issue 46 item 6a: 100 idle connections from 127.0.0.1, more than 64 descriptors hold,
    and a request on a new connection is still answered long before the 30 s head timeout
    would free one (``control`` gives up after 10 s): over the address's cap the server
    closes its longest-idle connection, the first one opened."""
    process, base_url, token = _start_with_few_descriptors(64)
    port = _port(base_url)
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(100)]
    try:
        report = control(base_url, "report", token)
        first_closed = held[0].recv(1) == b""  # EOF, not the 10 s timeout
        control(base_url, "shutdown", token, method="POST")
    finally:
        for sock in held:
            sock.close()
        _, err = stop(process)
    assert report["directory"] == str(TOOL_TURN) and first_closed
    assert "Traceback" not in err, err[:3000]
    assert len([line for line in err.splitlines() if "closed an idle connection" in line]) == 1, err[:3000]


def test_out_of_file_descriptors_the_longest_idle_connection_makes_room() -> None:
    """Idle connections from 90 addresses (one each: no address over its cap) run the server
    out of descriptors: ``accept()`` failing is logged once, the longest-idle connection is
    closed to make room, and a request is answered while the others are still held."""
    process, base_url, token = _start_with_few_descriptors(48)
    port = _port(base_url)
    held = [
        socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(f"127.0.0.{2 + n}", 0))
        for n in range(90)
    ]
    try:
        deadline = time.monotonic() + patience(30)
        while True:
            try:
                report = control(base_url, "report", token)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        control(base_url, "shutdown", token, method="POST")
    finally:
        for sock in held:
            sock.close()
        _, err = stop(process)
    assert report["directory"] == str(TOOL_TURN)
    accept_lines = [line for line in err.splitlines() if "cannot accept" in line]
    assert len(accept_lines) == 1, err[:3000]
    assert "Traceback" not in err, err[:3000]


def test_the_openai_sdk_does_not_retry_a_409_from_dsh_serve_replay() -> None:
    import openai

    from tests.serve.helpers import recorded_calls

    process, base_url, token = start_serve("replay", str(TOOL_TURN), "--allow-unconsumed")
    try:
        body, _ = recorded_calls(TOOL_TURN)[0]
        with openai.OpenAI(base_url=base_url, api_key="unused") as client:  # the SDK's default retries
            assert client.max_retries == 2
            with pytest.raises(openai.ConflictError) as caught:
                client.chat.completions.create(**{**body, "max_tokens": 7})
        assert caught.value.response.headers["x-should-retry"] == "false"
        report = control(base_url, "report", token)
        control(base_url, "shutdown", token, method="POST")
    finally:
        _, err = stop(process)
    assert len(report["refused"]) == 1  # exactly one request reached the server
    assert len([line for line in err.splitlines() if "refused 409" in line]) == 1, err

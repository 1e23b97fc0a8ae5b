"""``dsh serve`` as the user runs it, attacked over raw sockets: one log line per refusal, no traceback.

Issue 36, items 5-7: the real ``dsh serve replay`` / ``record`` process with a short
``--header-timeout`` and a small ``--max-body``; a bad, negative or huge ``Content-Length``,
a head never finished, a foreign ``Host``, a cross-origin or tokenless shutdown — each is
refused (the server keeps serving) with exactly one line on stderr; out of file descriptors,
``accept()`` failing is logged once and the server recovers.
"""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
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


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))


def test_out_of_file_descriptors_accept_is_logged_once_and_the_server_recovers() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "dsh.cli", "serve", "replay",
         str(TOOL_TURN), "--header-timeout", "0.5", "--allow-unconsumed"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_low_fd_limit,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    if " on http://" not in line:
        _, err = stop(process)
        pytest.fail(f"dsh serve did not start under RLIMIT_NOFILE 48: {line!r} {err}")
    base_url = line.strip().rsplit(" on ", 1)[1]
    token = process.stdout.readline().split("control token ", 1)[1].split()[0]
    port = _port(base_url)
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(90)]
    try:
        time.sleep(3)  # it accepts until out of descriptors, then retries accept() a few times
    finally:
        for sock in held:
            sock.close()
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
        assert report["directory"] == str(TOOL_TURN)
        control(base_url, "shutdown", token, method="POST")
    finally:
        _, err = stop(process)
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

"""dsh serve's HTTP surface against a web page and a hostile client (issue 36, items 5-7; 35, item 5).

A real server on 127.0.0.1 (replay and the record proxy), raw requests: a foreign ``Host``
(DNS rebinding) gets 421, a foreign ``Origin`` 403, a control route without the per-run
token 403; malformed input 400, an oversized body 413 before it is sent, a head never
finished is closed after the timeout. Every refusal carries ``x-should-retry: false``, the
``openai`` SDK sends a refused request once, and each refusal is one log line.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx2
import openai
import pytest

from dsh.http1 import Limits
from dsh.serve.pytest_plugin import BackgroundServer
from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.serve.transport import ReplayTransport
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.rawhttp import body, build, exchange, header, read_all, status
from tests.serve.helpers import SCENARIOS, recorded_calls

TOOL_TURN = SCENARIOS / "tool-call-turn"
CHAT = "/v1/chat/completions"
Replay = tuple[ReplayServer, list[str]]


@pytest.fixture
def replay() -> Iterator[tuple[ReplayServer, list[str]]]:
    logged: list[str] = []
    server = ReplayServer(
        TOOL_TURN, allow_hosts=["dsh.test", "proxy.test:8443"], limits=Limits(timeout=0.5), log=logged.append
    )
    background = BackgroundServer(server)
    background.start()
    try:
        yield server, logged
    finally:
        background.stop()


def _port(server: ReplayServer | RecordServer) -> int:
    return server.http.port


def _chat_body() -> bytes:
    import json

    return json.dumps(recorded_calls(TOOL_TURN)[0][0]).encode()


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}",
                                  "localhost.:{port}", "[::2]:{port}", "dsh.test.evil:{port}"])  # fmt: skip
def test_a_foreign_host_gets_421_and_no_session_data(replay: Replay, host: str) -> None:
    server, logged = replay
    port = _port(server)
    for path, method, extra in [(CHAT, "POST", _chat_body()), ("/_dsh/report", "GET", b"")]:
        headers = [("X-Dsh-Token", server.token), ("Content-Type", "application/json")]
        reply = exchange(port, build(method, path, host=host.format(port=port), headers=headers, body=extra))
        assert status(reply) == 421, reply[:200]
        assert header(reply, "x-should-retry") == "false"
        assert body(reply).count(b"\n") == 0 and b"is not this server" in body(reply)
        assert b"recordedId" not in reply and b"SNAPSHOT" not in reply
    assert server.sessions[0].served == 0  # nothing was answered
    assert len(logged) == 2 and all("refused 421" in line for line in logged)


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST",
                                  "dsh.test", "dsh.test:{port}", "proxy.test:8443"])  # fmt: skip
def test_loopback_names_and_allowed_hosts_are_answered(replay: Replay, host: str) -> None:
    server, logged = replay
    port = _port(server)
    headers = [("X-Dsh-Token", server.token)]
    reply = exchange(port, build("GET", "/_dsh/report", host=host.format(port=port), headers=headers))
    assert status(reply) == 200 and b'"sessions"' in body(reply)
    assert logged == []


def test_an_allowed_host_with_a_port_allows_that_port_only(replay: Replay) -> None:
    server, _ = replay
    reply = exchange(_port(server), build("GET", "/_dsh/report", host="proxy.test:8444"))
    assert status(reply) == 421


def test_a_request_without_host_or_with_two_gets_400(replay: Replay) -> None:
    server, logged = replay
    port = _port(server)
    assert status(exchange(port, build("GET", "/_dsh/report", host=None))) == 400
    two = build("GET", "/_dsh/report", host="127.0.0.1", headers=[("Host", "evil.example")])
    assert status(exchange(port, two)) == 400
    assert len(logged) == 2


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:1", "file://",
                                    "http://127.0.0.1:{port}.evil.example"])  # fmt: skip
def test_a_foreign_origin_cannot_stop_the_server_or_call_it(replay: Replay, origin: str) -> None:
    server, logged = replay
    port = _port(server)
    host = f"127.0.0.1:{port}"
    token = ("X-Dsh-Token", server.token)
    for method, path, data in [("POST", "/_dsh/shutdown", b""), ("GET", "/_dsh/report", b""),
                               ("POST", CHAT, _chat_body())]:  # fmt: skip
        headers = [("Origin", origin.format(port=port)), token, ("Content-Type", "text/plain")]
        reply = exchange(port, build(method, path, host=host, headers=headers, body=data))
        assert status(reply) == 403, reply[:200]
        assert header(reply, "x-should-retry") == "false" and b"cross-origin" in body(reply)
    assert not server.stopped.is_set() and server.sessions[0].served == 0
    assert len(logged) == 3


def test_the_control_routes_need_the_per_run_token(replay: Replay) -> None:
    server, _ = replay
    port = _port(server)
    host = f"127.0.0.1:{port}"
    for headers in ([], [("X-Dsh-Token", "guess")], [("X-Dsh-Token", server.token[:-1])]):
        for method, path in [("POST", "/_dsh/shutdown"), ("GET", "/_dsh/report")]:
            reply = exchange(port, build(method, path, host=host, headers=headers))
            assert status(reply) == 403 and b"X-Dsh-Token" in body(reply), reply[:200]
            assert header(reply, "x-should-retry") == "false"
    assert not server.stopped.is_set()
    same_origin = [("Origin", f"http://{host}"), ("X-Dsh-Token", server.token)]
    reply = exchange(port, build("POST", "/_dsh/shutdown", host=host, headers=same_origin))
    assert status(reply) == 200 and server.stopped.is_set()


def test_two_servers_have_different_tokens() -> None:
    assert ReplayServer(TOOL_TURN).token != ReplayServer(TOOL_TURN).token


def test_the_in_process_transport_answers_any_base_url_but_guards_the_control_routes() -> None:
    server = ReplayServer(TOOL_TURN)
    with httpx2.Client(transport=ReplayTransport(server), base_url="http://api.example") as client:
        assert client.get("/_dsh/report").status_code == 403
        assert client.get("/_dsh/report", headers={"X-Dsh-Token": server.token}).json()["ok"] is False
        with openai.OpenAI(api_key="unused", base_url="http://api.example/v1", http_client=client) as sdk:
            body_, _ = recorded_calls(TOOL_TURN)[0]
            sdk.chat.completions.create(**body_)  # the Host (api.example) does not apply in-process
    assert server.sessions[0].served == 1


@pytest.mark.parametrize("length", ["abc", "-5", "1e3", "+7", " ", "0x10", "5, 6", "٣"])
def test_a_bad_content_length_gets_400_in_one_log_line(replay: Replay, length: str) -> None:
    server, logged = replay
    port = _port(server)
    raw = f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n\r\n{{}}"
    reply = exchange(port, raw.encode())
    assert status(reply) == 400 and header(reply, "x-should-retry") == "false", reply[:200]
    assert b"Content-Length" in body(reply) or b"header" in body(reply)
    assert len(logged) == 1 and "refused 400" in logged[0] and "\n" not in logged[0]


@pytest.mark.parametrize("raw", [
    b"GARBAGE\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
    b"Content-Length: 3\r\n\r\n{}",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n{}",
])  # fmt: skip
def test_malformed_requests_get_400(replay: Replay, raw: bytes) -> None:
    server, logged = replay
    reply = exchange(_port(server), raw)
    assert status(reply) == 400, reply[:200]
    assert len(logged) == 1


def test_a_huge_declared_body_gets_413_before_it_is_sent(replay: Replay) -> None:
    server, logged = replay
    head = f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {300 * 1024 * 1024}\r\n\r\n"
    reply = exchange(_port(server), head.encode())  # not one byte of the body is sent
    assert status(reply) == 413, reply[:200]
    assert header(reply, "x-should-retry") == "false" and b"over the limit" in body(reply)
    assert len(logged) == 1 and "refused 413" in logged[0]


def test_the_body_limit_is_configurable_and_covers_chunked_bodies() -> None:
    logged: list[str] = []
    server = ReplayServer(TOOL_TURN, limits=Limits(max_body=1024), log=logged.append)
    background = BackgroundServer(server)
    background.start()
    try:
        port = _port(server)
        sized = build("POST", CHAT, host="127.0.0.1", body=b"x" * 2048)
        assert status(exchange(port, sized)) == 413
        chunked = (f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "400\r\n" + "x" * 1024 + "\r\n1\r\nx\r\n0\r\n\r\n").encode()  # fmt: skip
        assert status(exchange(port, chunked)) == 413
        fits = build("POST", CHAT, host="127.0.0.1", body=b"{}")
        assert status(exchange(port, fits)) == 409  # read and answered (it is no recorded call)
    finally:
        background.stop()
    assert [line.split(" ")[3] for line in logged] == ["413", "413", "409"]


def test_a_head_over_the_limit_gets_431(replay: Replay) -> None:
    server, logged = replay
    raw = f"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {'a' * 70_000}\r\n\r\n".encode()
    reply = exchange(_port(server), raw)
    assert status(reply) == 431 and len(logged) == 1


def test_a_head_never_finished_is_closed_after_the_timeout(replay: Replay) -> None:
    server, logged = replay
    with socket.create_connection(("127.0.0.1", _port(server)), timeout=20) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        reply = read_all(sock)  # the server ends it (a recv timeout here would fail the test)
    assert status(reply) == 408 and header(reply, "x-should-retry") == "false"
    assert len(logged) == 1 and "refused 408" in logged[0]


def test_a_stalled_body_and_an_idle_connection_are_closed(replay: Replay) -> None:
    server, logged = replay
    with socket.create_connection(("127.0.0.1", _port(server)), timeout=20) as sock:
        sock.sendall(f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{{".encode())
        assert status(read_all(sock)) == 408
    with socket.create_connection(("127.0.0.1", _port(server)), timeout=20) as sock:
        assert read_all(sock) == b""  # idle: closed without a word
    assert len(logged) == 1


def test_the_openai_sdk_sends_a_refused_request_once() -> None:
    counted: list[str] = []
    server = ReplayServer(TOOL_TURN)
    answer = server.answer

    def counting(request):  # type: ignore[no-untyped-def]
        counted.append(request.path)
        return answer(request)

    server.answer = counting  # type: ignore[method-assign]
    background = BackgroundServer(server)
    background.start()
    try:
        body_, _ = recorded_calls(TOOL_TURN)[0]
        changed = {**body_, "model": "another-model"}
        with (
            openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=2) as client,
            pytest.raises(openai.ConflictError),
        ):
            client.chat.completions.create(**changed)
    finally:
        report = background.stop()
    assert counted == [CHAT] and len(report["refused"]) == 1


def test_the_record_proxy_refuses_a_foreign_host_before_reaching_the_upstream(tmp_path: Path) -> None:
    with OpenAICompatServer([stream_reply(text=["ok"])]) as upstream:
        server = RecordServer(upstream.base_url, tmp_path / "rec")
        background = BackgroundServer(server)
        background.start()
        try:
            port = _port(server)
            evil = build("POST", CHAT, host=f"evil.example:{port}", body=_chat_body(),
                         headers=[("Authorization", "Bearer sk-test")])  # fmt: skip
            assert status(exchange(port, evil)) == 421
            foreign = [("Origin", "http://evil.example"), ("X-Dsh-Token", server.token)]
            cross = build("POST", "/_dsh/shutdown", host=f"127.0.0.1:{port}", headers=foreign)
            assert status(exchange(port, cross)) == 403
            assert status(exchange(port, build("POST", "/_dsh/shutdown", host=f"127.0.0.1:{port}"))) == 403
            huge = f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 999999999999\r\n\r\n"
            assert status(exchange(port, huge.encode())) == 413
            assert not server.stopped.is_set()
        finally:
            background.stop()
        assert upstream.requests == []

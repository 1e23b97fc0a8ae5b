"""``web_fetch`` refuses what only looks public, and connects to the very address it checked.

Issue 46, item 3. Every request goes through :class:`GuardTransport`, which forwards only
loopback destinations to a real transport and answers every other one with a canned page
itself: no test here sends a packet beyond 127.0.0.1, and a request the fetch should not
have sent is seen. Names resolve through the tool's ``resolver`` seam (a dict), as an
attacker's DNS would answer them.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.tools import ToolContext, ToolOutput
from dsh.tools.registry import ToolRegistry
from dsh.tools.web.policy import FetchPolicy
from dsh.tools.web.tool import WebFetchTool

PUBLIC = "93.184.215.14"
"""A global address no test ever connects to (the guard answers for it)."""
CANNED = b"the page at a public address"


@dataclass
class GuardTransport(httpx.AsyncBaseTransport):
    """Forwards requests for loopback hosts to ``real``; answers any other host itself."""

    real: httpx.AsyncBaseTransport = field(default_factory=httpx.AsyncHTTPTransport)
    seen: list[httpx.Request] = field(default_factory=list)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        host = request.url.host
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if loopback:
            return await self.real.handle_async_request(request)
        return httpx.Response(200, headers={"content-type": "text/plain"}, content=CANNED, request=request)

    async def aclose(self) -> None:
        await self.real.aclose()


class Resolver:
    """Answers a name's first lookup from ``names`` and every later one from ``later`` (else
    ``names`` again): an attacker's DNS rebinding between two lookups."""

    def __init__(self, names: dict[str, list[str]], later: dict[str, list[str]] | None = None) -> None:
        self.names, self.later = names, later or names
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        answers = self.later if host in self.calls else self.names
        self.calls.append(host)
        if host not in answers:
            raise OSError(f"no such name {host}")
        return answers[host]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        server: _Site = self.server  # type: ignore[assignment]
        server.hosts.append(self.headers.get("host", ""))
        body = b"the local page"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Site(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hosts: list[str] = []
        self.sni: list[str | None] = []


def _serve(server: _Site) -> Iterator[_Site]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site() -> Iterator[_Site]:
    """A plain HTTP server on 127.0.0.1 recording each request's ``Host``."""
    yield from _serve(_Site())


async def _fetch(
    url: str, resolver: Resolver | None = None, guard: GuardTransport | None = None, **policy: Any
) -> ToolOutput:
    tool = WebFetchTool(FetchPolicy(**policy), transport=guard or GuardTransport(), resolver=resolver)
    ctx = ToolContext(session_id="s", call_id="c", cwd=Path("."))
    return await ToolRegistry([tool]).call("web_fetch", json.dumps({"url": url}), ctx)


def _text(out: ToolOutput) -> str:
    return str(out.content[0]["text"])


EMBEDDED = [
    ("64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254"),
    ("64:ff9b::7f00:1", "NAT64 of 127.0.0.1"),
    ("64:ff9b::a00:1", "NAT64 of 10.0.0.1"),
    ("64:ff9b:1::a9fe:a9fe", "local-use NAT64"),
    ("64:ff9b:1:a9fe:a9:fe00::", "local-use NAT64, a /48 embedding"),
    ("2002:a9fe:a9fe::1", "6to4 of 169.254.169.254"),
    ("2002:7f00:1::", "6to4 of 127.0.0.1"),
    ("::169.254.169.254", "IPv4-compatible"),
    ("::7f00:1", "IPv4-compatible 127.0.0.1"),
    ("::ffff:0:a9fe:a9fe", "IPv4-translated"),
    ("::ffff:0:7f00:1", "IPv4-translated 127.0.0.1"),
    ("::ffff:169.254.169.254", "IPv4-mapped"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
    ("2001:0:808:808:8000:63bf:3fff:fdd2", "Teredo with a public server"),
]

METADATA = ["169.254.169.254", "fd00:ec2::254", "168.63.129.16", "192.0.0.192", "100.100.100.200"]


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _assert_blocked(out: ToolOutput, guard: GuardTransport, address: str) -> None:
    assert out.is_error and out.code == "WEB_BLOCKED_URL", _text(out)
    assert address in _text(out) and "\n" not in _text(out)
    assert guard.seen == []  # refused before connecting


@pytest.mark.parametrize(("address", "what"), EMBEDDED, ids=[w for _, w in EMBEDDED])
async def test_an_embedded_ipv4_form_is_refused_before_connecting(address: str, what: str) -> None:
    shown = str(ipaddress.ip_address(address))
    literal = GuardTransport()
    out = await _fetch(f"http://[{address}]/latest/meta-data/", guard=literal)
    _assert_blocked(out, literal, shown)
    resolved = GuardTransport()
    out = await _fetch("http://meta.test/latest/meta-data/", Resolver({"meta.test": [address]}), resolved)
    _assert_blocked(out, resolved, shown)


@pytest.mark.parametrize("address", METADATA)
async def test_a_metadata_address_is_refused_even_where_private_hosts_are_allowed(address: str) -> None:
    for allow_private in (False, True):
        literal = GuardTransport()
        out = await _fetch(f"http://{_bracketed(address)}/", guard=literal, allow_private=allow_private)
        _assert_blocked(out, literal, address)
        resolved = GuardTransport()
        out = await _fetch("http://meta.test/", Resolver({"meta.test": [address]}), resolved,
                           allow_private=allow_private)  # fmt: skip
        _assert_blocked(out, resolved, address)
        assert "metadata" in _text(out)


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", PUBLIC, "2620:fe::fe"])
async def test_a_public_address_in_any_form_is_fetched(address: str) -> None:
    guard = GuardTransport()
    out = await _fetch("http://public.test/page", Resolver({"public.test": [address]}), guard)
    assert not out.is_error, _text(out)
    assert _text(out) == f"Fetched http://public.test/page (HTTP 200)\n\n{CANNED.decode()}"
    assert [(r.url.host, r.headers["host"]) for r in guard.seen] == [(address, "public.test")]


async def test_every_address_a_name_resolves_to_is_checked() -> None:
    guard = GuardTransport()
    out = await _fetch("http://mixed.test/", Resolver({"mixed.test": [PUBLIC, "64:ff9b::7f00:1"]}), guard)
    _assert_blocked(out, guard, "64:ff9b::7f00:1")


async def test_a_rebinding_answer_never_reaches_the_loopback_server(site: _Site) -> None:
    """The name resolves to a public address for the check and to 127.0.0.1 next: the
    connection goes to the address that was checked, so the local server sees nothing."""
    port = site.server_address[1]
    resolver = Resolver({"localhost": [PUBLIC]}, later={"localhost": ["127.0.0.1"]})
    guard = GuardTransport()
    out = await _fetch(f"http://localhost:{port}/secret", resolver, guard)
    assert site.hosts == []
    assert not out.is_error and CANNED.decode() in _text(out), _text(out)
    assert [(r.url.host, r.url.port, r.headers["host"]) for r in guard.seen] == [
        (PUBLIC, port, f"localhost:{port}")
    ]
    assert resolver.calls == ["localhost"]  # resolved once


async def test_a_name_is_fetched_from_its_checked_address_with_its_own_host_header(site: _Site) -> None:
    port = site.server_address[1]
    out = await _fetch(f"http://site.test:{port}/page", Resolver({"site.test": ["127.0.0.1"]}),
                       allow_private=True)  # fmt: skip
    assert not out.is_error, _text(out)
    assert _text(out) == f"Fetched http://site.test:{port}/page (HTTP 200)\n\nthe local page"
    assert site.hosts == [f"site.test:{port}"]


@pytest.fixture
def tls_site(tmp_path: Path) -> Iterator[tuple[_Site, ssl.SSLContext]]:
    """An HTTPS server on 127.0.0.1 whose certificate names only ``fetch.test``, and a client
    context trusting it; the server records the SNI each handshake sent."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=fetch.test",
         "-addext", "subjectAltName=DNS:fetch.test"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    server = _Site()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda _sock, name, _ctx: server.sni.append(name)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    client = ssl.create_default_context(cafile=str(cert))
    yield from ((s, client) for s in _serve(server))


async def test_https_to_the_checked_address_sends_the_names_sni_and_host(
    tls_site: tuple[_Site, ssl.SSLContext],
) -> None:
    site, client = tls_site
    port = site.server_address[1]
    guard = GuardTransport(real=httpx.AsyncHTTPTransport(verify=client))
    out = await _fetch(f"https://fetch.test:{port}/page", Resolver({"fetch.test": ["127.0.0.1"]}), guard,
                       allow_private=True)  # fmt: skip
    assert not out.is_error, _text(out)  # the certificate was checked against fetch.test
    assert _text(out) == f"Fetched https://fetch.test:{port}/page (HTTP 200)\n\nthe local page"
    assert [r.url.host for r in guard.seen] == ["127.0.0.1"]
    assert site.sni == ["fetch.test"] and site.hosts == [f"fetch.test:{port}"]

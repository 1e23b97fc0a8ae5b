"""``web_fetch`` against a real HTTP server on 127.0.0.1 (loopback allowed by config here)."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dsh.snapshot import run_scenario
from dsh.tools import ToolContext
from dsh.tools.registry import ToolRegistry
from dsh.tools.web.policy import FetchPolicy
from dsh.tools.web.tool import WebFetchTool

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Menu</title>
<style>body { color: red; }</style>
<script>console.log("dropped")</script></head>
<body>
<h1>Caf&eacute; menu</h1>
<p>Prices include <strong>service &amp; <em>tax</em></strong> &mdash; updated daily.</p>
<ul>
  <li>Espresso</li>
  <li>Flat white</li>
</ul>
<table>
  <thead><tr><th>Drink</th><th>Price</th></tr></thead>
  <tbody>
    <tr><td>Espresso</td><td>&euro;2</td></tr>
    <tr><td>Flat white</td><td>&euro;3</td></tr>
  </tbody>
</table>
<p>See <a href="https://fixture.invalid/specials">today&rsquo;s specials</a>.</p>
</body></html>"""

MENU = """Menu

# Café menu

Prices include **service & _tax_** — updated daily.

-   Espresso
-   Flat white

| Drink | Price |
| --- | --- |
| Espresso | €2  |
| Flat white | €3  |

See [today’s specials](https://fixture.invalid/specials)."""


HTML = "text/html; charset=utf-8"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        return None

    def _send(
        self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path
        if path == "/menu.html":
            self._send(200, PAGE.encode())
        elif path == "/moved":
            self._send(302, b"", location="/menu.html")
        elif path.startswith("/loop"):
            n = int(path.removeprefix("/loop") or 0)
            self._send(301, b"", location=f"/loop{n + 1}")
        elif path == "/away":
            self._send(307, b"", location="http://localhost:1/elsewhere")
        elif path == "/nowhere":
            self._send(302, b"")
        elif path == "/missing":
            self._send(404, b"not found", "text/plain")
        elif path == "/latin1":
            self._send(200, "caf\xe9".encode("latin-1"), "text/plain; charset=iso-8859-1")
        elif path == "/binary":
            self._send(200, b"\x00\x01", "application/octet-stream")
        elif path == "/declared-huge":
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", "6000000")
            self.end_headers()
            self.wfile.write(b"x" * 1000)
        elif path == "/streamed-huge":
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.end_headers()
            self.close_connection = True
            for _ in range(60):
                self.wfile.write(b"y" * 100_000)
        elif path == "/slow":
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", "100")
            self.end_headers()
            self.wfile.write(b"first bytes")
            self.wfile.flush()
            time.sleep(3)
        else:
            self._send(404, b"not found", "text/plain")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def _fetch(url: str, **policy: Any) -> Any:
    tool = WebFetchTool(FetchPolicy(**{"allow_private": True, **policy}))
    ctx = ToolContext(session_id="s", call_id="c", cwd=Path("."))
    return await ToolRegistry([tool]).call("web_fetch", json.dumps({"url": url}), ctx)


def _text(out: Any) -> str:
    return str(out.content[0]["text"])


async def test_an_html_page_becomes_the_originals_markdown(site: str) -> None:
    out = await _fetch(f"{site}/menu.html")
    assert not out.is_error
    assert _text(out) == f"Fetched {site}/menu.html (HTTP 200)\n\n{MENU}"
    assert out.meta == {"url": f"{site}/menu.html", "statusCode": 200, "truncated": False}


async def test_same_origin_redirects_are_followed_and_name_the_final_url(site: str) -> None:
    out = await _fetch(f"{site}/moved")
    assert _text(out).startswith(f"Fetched {site}/menu.html (HTTP 200)\n\n")


@pytest.mark.parametrize(
    ("path", "text", "code"),
    [
        ("/loop", "Error: exceeded the maximum of 5 redirects", "WEB_REDIRECT_BLOCKED"),
        (
            "/away",
            "Error: cross-origin redirect to http://localhost:1 is not followed automatically; retry against "
            "that URL directly",
            "WEB_REDIRECT_BLOCKED",
        ),
        ("/nowhere", "Error: redirect response (HTTP 302) without a Location header", "WEB_PROVIDER_ERROR"),
        (
            "/binary",
            'Error: unsupported content type "application/octet-stream"',
            "WEB_UNSUPPORTED_CONTENT_TYPE",
        ),
        ("/declared-huge", "Error: response exceeds the maximum of 5000000 bytes", "WEB_FETCH_TOO_LARGE"),
    ],
)
async def test_refusals(site: str, path: str, text: str, code: str) -> None:
    out = await _fetch(site + path)
    assert out.is_error and _text(out) == text and out.code == code


async def test_a_status_page_and_a_charset_are_ordinary_results(site: str) -> None:
    assert _text(await _fetch(f"{site}/missing")) == f"Fetched {site}/missing (HTTP 404)\n\nnot found"
    assert _text(await _fetch(f"{site}/latin1")) == f"Fetched {site}/latin1 (HTTP 200)\n\ncafé"


async def test_a_huge_stream_is_cut_and_flagged(site: str) -> None:
    out = await _fetch(f"{site}/streamed-huge")
    text = _text(out)
    assert not out.is_error and out.meta["truncated"] is True
    assert text.endswith("\n\n(Content truncated. Fetch a more specific URL or section for the full text.)")
    assert len(text) <= 200_000 and text.startswith(f"Fetched {site}/streamed-huge (HTTP 200)\n\nyyyy")


async def test_a_slow_body_times_out(site: str) -> None:
    out = await _fetch(f"{site}/slow", timeout_s=0.5)
    assert out.is_error and _text(out) == "Error: web fetch timed out" and out.code == "WEB_FETCH_TIMEOUT"


async def test_loopback_and_private_hosts_are_refused_unless_configured(site: str) -> None:
    for url in (f"{site}/menu.html", "http://10.0.0.1/", "http://[::1]:9/", "http://169.254.1.1/latest"):
        out = await _fetch(url, allow_private=False)
        assert out.is_error and out.code == "WEB_BLOCKED_URL", url
        assert "resolves to the non-public address" in _text(out)
        assert "\n" not in _text(out)


async def test_bad_urls(site: str) -> None:
    cases = [
        ("file:///etc/passwd", 'Error: unsupported URL scheme "file:" (only http and https are allowed)'),
        ("ftp://example.com/x", 'Error: unsupported URL scheme "ftp:" (only http and https are allowed)'),
        ("not a url", "Error: invalid URL: not a url"),
        ("http://user:pw@127.0.0.1/", "Error: credentials in URLs are not allowed"),
        ("http://x/" + "a" * 2050, "Error: URL exceeds the maximum length of 2048"),
        ("   ", "Error: url must be a non-empty string"),
    ]
    for url, text in cases:
        assert _text(await _fetch(url)) == text, url


async def test_an_unreachable_host_is_one_line(site: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    out = await _fetch(f"http://127.0.0.1:{port}/")
    assert out.is_error and out.code == "WEB_PROVIDER_ERROR"
    assert _text(out).startswith("Error: web fetch failed: ") and "\n" not in _text(out)


async def test_a_replay_serves_the_recorded_result_without_the_network(upstream: Path) -> None:
    result = await run_scenario(upstream / "web-fetch", "replay")  # nothing listens on 43117
    assert result.ok, result.failure_text()
    assert result.sessions[0].tool_results.equal == result.sessions[0].tool_results.total == 1


async def test_a_replayed_call_with_another_url_is_a_divergence(upstream: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "web-fetch"
    shutil.copytree(upstream / "web-fetch", scenario)
    log = scenario / "session.jsonl"
    lines = log.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "tool/call")
    lines[at] = lines[at].replace("menu.html", "other.html")
    log.write_text("\n".join(lines) + "\n")
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    assert "other.html" in result.failure_text() and "menu.html" in result.failure_text()

"""One GET for ``web_fetch``: the URL policy, redirects, size and time limits, decoding.

The original's rules and texts (all ``WebError`` codes): http/https only, no credentials,
at most 2048 characters; redirects followed by hand, same origin only, at most 5; a
declared ``Content-Length`` over the cap is refused and a longer stream is cut (flagged
truncated); text and HTML content types only; the charset from ``Content-Type`` (UTF-8 by
default). dsh's own rule on top: each hop's host is resolved once (:class:`Resolver`, default
:func:`system_resolver`), every address of the answer is checked by
:func:`dsh.tools.web.addresses.refused` (non-public addresses unless
:attr:`FetchPolicy.allow_private`, embedded IPv4 addresses unwrapped, cloud metadata services
always), and the request is sent to a checked address — the host name kept in ``Host`` and
the TLS server name — so a DNS answer that changes after the check (rebinding) is never used.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import ipaddress
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from dsh.errors import ToolError
from dsh.tools.codes import tool_error
from dsh.tools.web.addresses import refused
from dsh.tools.web.policy import FetchPolicy, Resolver

USER_AGENT = "deepseek-harness/0.0.1 (+https://github.com/deepseek-ai)"
ACCEPT = "text/html,application/xhtml+xml,text/*;q=0.9,application/json;q=0.8"
REDIRECTS = frozenset({301, 302, 303, 307, 308})

INVALID_URL = "WEB_INVALID_URL"
BLOCKED_URL = "WEB_BLOCKED_URL"
REDIRECT_BLOCKED = "WEB_REDIRECT_BLOCKED"
PROVIDER_ERROR = "WEB_PROVIDER_ERROR"
UNSUPPORTED_TYPE = "WEB_UNSUPPORTED_CONTENT_TYPE"
TOO_LARGE = "WEB_FETCH_TOO_LARGE"
TIMEOUT = "WEB_FETCH_TIMEOUT"


@dataclass(frozen=True, slots=True)
class Fetched:
    """A decoded response: final URL and status, body text, whether it is HTML, truncated."""

    url: str
    status: int
    text: str
    html: bool
    truncated: bool


def serialized(url: httpx.URL) -> str:
    """The URL as the WHATWG serializer writes it (an empty path is ``/``)."""
    text = str(url)
    return text if url.raw_path not in (b"", b"?") else str(url.copy_with(path="/"))


def checked_url(raw: str, policy: FetchPolicy) -> httpx.URL:
    """The URL to fetch, or the original's refusal."""
    if len(raw) > policy.max_url_chars:
        raise tool_error(f"URL exceeds the maximum length of {policy.max_url_chars}", INVALID_URL)
    parts = urlsplit(raw)
    if not parts.scheme:
        raise tool_error(f"invalid URL: {raw}", INVALID_URL)
    if parts.scheme.lower() not in ("http", "https"):
        raise tool_error(
            f'unsupported URL scheme "{parts.scheme.lower()}:" (only http and https are allowed)', INVALID_URL
        )
    try:
        url = httpx.URL(raw)
    except (httpx.InvalidURL, ValueError) as exc:
        raise tool_error(f"invalid URL: {raw}", INVALID_URL) from exc
    if not url.host:
        raise tool_error(f"invalid URL: {raw}", INVALID_URL)
    if url.userinfo:
        raise tool_error("credentials in URLs are not allowed", BLOCKED_URL)
    return url


async def system_resolver(host: str, port: int) -> list[str]:
    """The system's answer for ``host`` (``getaddrinfo``), each address once, in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


async def checked_addresses(url: httpx.URL, policy: FetchPolicy, resolver: Resolver) -> list[str]:
    """The addresses ``url``'s host stands for — the literal, or the one answer of ``resolver``
    — each allowed by :func:`~dsh.tools.web.addresses.refused`; else the one-line refusal.
    The fetch connects to these addresses only, so a second DNS answer never counts."""
    host = url.host
    literal = _literal(host)
    if literal is not None:
        answer: list[str] = [literal]
    else:
        try:
            answer = list(await resolver(url.raw_host.decode("ascii"), _origin(url)[2] or 80))
        except (OSError, UnicodeError) as exc:
            raise tool_error(f"web fetch failed: cannot resolve {host}: {exc}", PROVIDER_ERROR) from exc
        if not answer:
            raise tool_error(f"web fetch failed: cannot resolve {host}: no address", PROVIDER_ERROR)
    for address in answer:
        why = refused(address, allow_private=policy.allow_private)
        if why is not None:
            raise tool_error(f"blocked URL: {host} resolves to {why}", BLOCKED_URL)
    return list(dict.fromkeys(str(ipaddress.ip_address(a.split("%", 1)[0])) for a in answer))


@contextlib.asynccontextmanager
async def _get(
    client: httpx.AsyncClient, url: httpx.URL, addresses: list[str], headers: dict[str, str]
) -> AsyncIterator[httpx.Response]:
    """The streamed response to a GET of ``url`` sent to the first of ``addresses`` that takes
    the connection: the URL's host stays in ``Host`` and, for https, in the TLS server name
    (SNI and the certificate check)."""
    response = await _send(client, url, addresses, headers)
    try:
        yield response
    finally:
        await response.aclose()


async def _send(
    client: httpx.AsyncClient, url: httpx.URL, addresses: list[str], headers: dict[str, str]
) -> httpx.Response:
    fields = {**headers, "host": url.netloc.decode("ascii")}
    named = url.scheme == "https" and _literal(url.host) is None
    extensions = {"sni_hostname": url.raw_host.decode("ascii")} if named else {}
    failure: httpx.ConnectError | None = None
    for address in addresses:
        pinned = url.copy_with(host=address)
        request = client.build_request("GET", pinned, headers=fields, extensions=extensions)
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError as exc:
            failure = exc
    assert failure is not None, "no address to connect to"
    raise failure


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.host, url.port or default)


def content_kind(content_type: str | None) -> bool:
    """Whether the body is HTML (``True``) or text (``False``); anything else is refused."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in ("text/html", "application/xhtml+xml"):
        return True
    if kind.startswith("text/") or kind in ("application/json", "application/xml"):
        return False
    if kind.endswith(("+json", "+xml")):
        return False
    raise tool_error(f'unsupported content type "{kind or "unknown"}"', UNSUPPORTED_TYPE)


def _charset(content_type: str | None) -> str:
    for param in (content_type or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            name = value.strip().strip('"').strip("'")
            try:
                return codecs.lookup(name).name
            except LookupError as exc:
                raise tool_error(f'unsupported charset "{name}"', UNSUPPORTED_TYPE) from exc
    return "utf-8"


async def _read(response: httpx.Response, policy: FetchPolicy) -> tuple[bytes, bool]:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > policy.max_bytes:
        raise tool_error(f"response exceeds the maximum of {policy.max_bytes} bytes", TOO_LARGE)
    body = bytearray()
    async for piece in response.aiter_bytes():
        body += piece
        if len(body) > policy.max_bytes:
            return bytes(body[: policy.max_bytes]), True
    return bytes(body), False


async def fetch(
    raw: str,
    policy: FetchPolicy,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    resolver: Resolver | None = None,
) -> Fetched:
    """GET ``raw`` under ``policy``; every failure is a one-line ``ToolError`` with a ``WEB_*`` code.

    ``resolver`` turns host names into addresses (default :func:`system_resolver`).
    """
    url = checked_url(raw, policy)
    try:
        async with asyncio.timeout(policy.timeout_s):
            return await _fetch(url, policy, transport, resolver or system_resolver)
    except TimeoutError as exc:
        raise tool_error("web fetch timed out", TIMEOUT) from exc


async def _fetch(
    url: httpx.URL, policy: FetchPolicy, transport: httpx.AsyncBaseTransport | None, resolver: Resolver
) -> Fetched:
    headers = {"user-agent": USER_AGENT, "accept": ACCEPT}
    async with httpx.AsyncClient(
        follow_redirects=False, timeout=None, transport=transport, trust_env=False
    ) as client:
        for hop in range(policy.max_redirects + 1):
            addresses = await checked_addresses(url, policy, resolver)
            try:
                async with _get(client, url, addresses, headers) as response:
                    if response.status_code in REDIRECTS:
                        location = response.headers.get("location")
                        if not location:
                            raise tool_error(
                                f"redirect response (HTTP {response.status_code}) without a Location header",
                                PROVIDER_ERROR,
                            )
                        target = checked_url(urljoin(str(url), location), policy)
                        if _origin(target) != _origin(url):
                            origin = f"{target.scheme}://{target.netloc.decode('ascii', errors='replace')}"
                            raise tool_error(
                                f"cross-origin redirect to {origin} is not followed automatically; retry "
                                "against that URL directly",
                                REDIRECT_BLOCKED,
                            )
                        if hop == policy.max_redirects:
                            break
                        url = target
                        continue
                    content_type = response.headers.get("content-type")
                    html = content_kind(content_type)
                    charset = _charset(content_type)
                    data, cut = await _read(response, policy)
                    text = data.decode(charset, errors="replace")
                    if len(text) > policy.max_chars:
                        text, cut = text[: policy.max_chars], True
                    return Fetched(serialized(url), response.status_code, text, html, cut)
            except ToolError:
                raise
            except httpx.HTTPError as exc:
                raise tool_error(f"web fetch failed: {exc or type(exc).__name__}", PROVIDER_ERROR) from exc
    raise tool_error(f"exceeded the maximum of {policy.max_redirects} redirects", REDIRECT_BLOCKED)

"""Which ``Host`` and ``Origin`` headers dsh's local HTTP servers answer: the one home of that rule.

``dsh serve`` and ``dsh ui`` listen on 127.0.0.1, but a web page in the user's browser can
still reach them: through DNS rebinding (``evil.example`` resolving to 127.0.0.1, so the page
reads every answer as same-origin) or with a cross-origin request (a form POST needs no
preflight). :class:`HostPolicy` refuses both:

- ``Host`` must name ``127.0.0.1``, ``localhost`` or ``[::1]`` (any port, or none: a browser
  only sends these when it was pointed at a loopback URL, port forwarding included), the
  address the server was bound to when that is a specific address, or an ``--allow-host``
  entry (``NAME`` any port, ``NAME:PORT`` that port only); else 421 Misdirected Request. A
  request without ``Host`` (or with two) gets 400, as HTTP/1.1 requires.
- ``Origin``, when a request carries one, must be the request's own origin (scheme aside,
  its ``host[:port]`` equals ``Host``) or an ``--allow-host`` entry; else 403 (``null``,
  a sandboxed frame's origin, is foreign too). Clients that are not browsers send none.

Stdlib only, so any layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

LOCAL_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""The loopback names every policy accepts."""
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
"""Bind addresses that name no host (listening on every interface)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: the status and a one-line message."""

    status: int
    message: str


def split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` → (lower-cased name, port or ``None``); ``None`` when malformed.

    IPv6 literals keep their brackets (``[::1]``).
    """
    value = value.strip().lower()
    if not value or any(c.isspace() or c in "/@?#\\" for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, sep, port_text = value.partition(":")
        rest = sep + port_text
        if ":" in port_text:
            return None
    if not rest:
        return name, None
    if not rest.startswith(":") or not rest[1:].isascii() or not rest[1:].isdigit() or len(rest) > 6:
        return None
    port = int(rest[1:])
    return (name, port) if name and port <= 65535 else None


def _bracketed(host: str) -> str:
    host = host.strip().lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class HostPolicy:
    """The ``Host`` / ``Origin`` rule of one server (see the module docstring)."""

    def __init__(self, allow: Iterable[str] = (), *, bound: str | None = None) -> None:
        self.names: set[str] = set(LOCAL_NAMES)
        """Names accepted with any port."""
        self.exact: set[tuple[str, int]] = set()
        """``(name, port)`` pairs accepted with that port only."""
        self.extra_names: set[str] = set()
        self.extra_exact: set[tuple[str, int]] = set()
        if bound is not None and _bracketed(bound) not in WILDCARDS:
            self.names.add(_bracketed(bound))
        for entry in allow:
            parsed = split_host(_bracketed(entry) if entry.count(":") > 1 else entry)
            if parsed is None:
                raise ValueError(f"--allow-host {entry!r}: not a host name or host:port")
            name, port = parsed
            if port is None:
                self.names.add(name)
                self.extra_names.add(name)
            else:
                self.exact.add((name, port))
                self.extra_exact.add((name, port))

    def _allowed(self, parsed: tuple[str, int | None], names: set[str], exact: set[tuple[str, int]]) -> bool:
        name, port = parsed
        return name in names or (port is not None and (name, port) in exact)

    def check_host(self, host: str | None) -> Refusal | None:
        """``None`` when ``host`` (the ``Host`` header, ``None`` if absent) is accepted."""
        if host is None:
            return Refusal(400, "no Host header")
        parsed = split_host(host)
        if parsed is None:
            return Refusal(400, f"malformed Host header {host[:100]!r}")
        if not self._allowed(parsed, self.names, self.exact):
            return Refusal(421, f"Host {host[:100]!r} is not this server (--allow-host to accept it)")
        return None

    def check_origin(self, origin: str | None, host: str) -> Refusal | None:
        """``None`` when the request carries no ``Origin`` or its own (or an allowed) one."""
        if origin is None:
            return None
        scheme, sep, netloc = origin.strip().lower().partition("://")
        parsed = split_host(netloc) if sep and scheme in ("http", "https") else None
        if parsed is not None and (
            netloc == host.strip().lower() or self._allowed(parsed, self.extra_names, self.extra_exact)
        ):
            return None
        return Refusal(403, f"cross-origin request from {origin[:100]!r} refused")

    def check(self, headers: Mapping[str, str], *, duplicate_host: bool = False) -> Refusal | None:
        """Both checks on lower-cased ``headers``; ``None`` when the request may be answered."""
        if duplicate_host:
            return Refusal(400, "more than one Host header")
        host = headers.get("host")
        refused = self.check_host(host)
        if refused is not None or host is None:
            return refused
        return self.check_origin(headers.get("origin"), host)

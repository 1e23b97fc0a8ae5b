"""Raw HTTP/1.1 over a socket, for the tests that send what no client library would."""

from __future__ import annotations

import socket
from collections.abc import Iterable


def build(
    method: str, path: str, *, host: str | None, headers: Iterable[tuple[str, str]] = (), body: bytes = b""
) -> bytes:
    """A request with ``Connection: close`` (so the reply ends at EOF) and, when ``body``, its length."""
    lines = [f"{method} {path} HTTP/1.1", *([f"Host: {host}"] if host is not None else [])]
    lines += [f"{name}: {value}" for name, value in headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def exchange(port: int, data: bytes, *, timeout: float = 20.0) -> bytes:
    """Send ``data`` to 127.0.0.1:``port`` and read until the server closes (or resets)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    """Everything until EOF; a reset ends it too (the server closed with unread input)."""
    parts = []
    while True:
        try:
            piece = sock.recv(65536)
        except ConnectionResetError:
            break
        if not piece:
            break
        parts.append(piece)
    return b"".join(parts)


def status(response: bytes) -> int:
    """The status code of a raw response (0 when there is none)."""
    line = response.split(b"\r\n", 1)[0].split(b" ")
    return int(line[1]) if len(line) > 1 and line[1].isdigit() else 0


def header(response: bytes, name: str) -> str | None:
    """One header of a raw response (case-insensitive), or ``None``."""
    head = response.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    for line in head:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    return None


def body(response: bytes) -> bytes:
    """The bytes after the head (not de-chunked)."""
    return response.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in response else b""

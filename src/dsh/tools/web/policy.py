"""``web_fetch``'s limits, importable without the HTTP client (``fetch.py`` loads it lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """The limits of one fetch (the original's defaults) and whether private hosts are allowed."""

    max_url_chars: int = 2048
    max_bytes: int = 5_000_000
    max_chars: int = 100_000
    timeout_s: float = 30.0
    max_redirects: int = 5
    allow_private: bool = False


class Resolver(Protocol):
    """How ``web_fetch`` turns a host name into addresses (default: the system's ``getaddrinfo``).

    Returns the addresses as text (``"93.184.215.14"``, ``"2606:2800::1"``), in preference
    order; raises ``OSError`` (``socket.gaierror``) when the name does not resolve.
    """

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        """The addresses ``host`` (ASCII, IDNA-encoded) stands for, connecting to ``port``."""
        ...

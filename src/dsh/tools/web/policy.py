"""``web_fetch``'s limits, importable without the HTTP client (``fetch.py`` loads it lazily)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """The limits of one fetch (the original's defaults) and whether private hosts are allowed."""

    max_url_chars: int = 2048
    max_bytes: int = 5_000_000
    max_chars: int = 100_000
    timeout_s: float = 30.0
    max_redirects: int = 5
    allow_private: bool = False

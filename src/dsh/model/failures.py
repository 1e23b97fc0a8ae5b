"""Failure classification for OpenAI-compatible providers: HTTP status and wording to a code.

The codes are the loop's vocabulary (``dsh.events.chunks``): ``AUTH``, ``RATE_LIMIT``,
``QUOTA``, ``CONTEXT_OVERFLOW``, ``BAD_REQUEST``, ``OVERLOADED``, ``SERVER``, ``HTTP_<status>``,
``CONNECTION``, ``CONNECTION_REFUSED``, ``TIMEOUT``, ``MALFORMED_RESPONSE``, ``STREAM_CLOSED``,
``EMPTY_RESPONSE``. Messages are one line, carry no secret (:func:`scrub`), and end with
machine-readable hints such as ``[retry-after-ms=2000]`` (:func:`retry_after_ms` reads it
back; :func:`retry_delay` turns it into the wait before the retry, at most
:data:`MAX_RETRY_AFTER`).
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from dsh import jsonx

_CONTEXT = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|too many tokens|prompt is too long"
    r"|reduce the length|input is too long|exceeds? the (model'?s )?max",
    re.IGNORECASE,
)
_QUOTA = re.compile(
    r"quota|insufficient[ _-]?balance|balance|credit|billing|exceeded your current", re.IGNORECASE
)
_RATE = re.compile(r"rate[ _-]?limit|too many requests", re.IGNORECASE)
_OVERLOAD = re.compile(r"overload|capacity|unavailable|busy", re.IGNORECASE)
_RETRY_HINT = re.compile(r"\[retry-after-ms=(\d+)\]")

MAX_MESSAGE = 400

MAX_RETRY_AFTER = 60.0
"""The longest (seconds) a provider's ``Retry-After`` may make a retry wait: a longer hint
(a day, for an exhausted quota) is capped to it, so a retry loop always ends in bounded time."""

HINTS = {
    "AUTH": "check the API key",
    "HTTP_404": "check the base URL and model name",
    "CONTEXT_OVERFLOW": "the conversation is longer than the model's context window",
    "QUOTA": "the account's quota or balance is exhausted",
}


def classify_status(status: int, text: str) -> str:
    """The failure code for an HTTP error status and the provider's error wording."""
    if status in (401, 403):
        return "AUTH"
    if status in (402, 429) and _QUOTA.search(text):
        return "QUOTA"
    if status == 429:
        return "RATE_LIMIT"
    if status == 400 and _CONTEXT.search(text):
        return "CONTEXT_OVERFLOW"
    if status in (400, 413, 422):
        return "BAD_REQUEST"
    if status in (503, 529):
        return "OVERLOADED"
    if 500 <= status < 600:
        return "SERVER"
    return f"HTTP_{status}"


def classify_stream_error(error: Mapping[str, Any]) -> str:
    """The failure code for an ``{"error": {...}}`` object sent inside a 200 stream."""
    for key in ("status", "code"):
        value = error.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 400 <= value < 600:
            return classify_status(value, error_text(error))
    text = error_text(error)
    for pattern, code in (
        (_QUOTA, "QUOTA"),
        (_CONTEXT, "CONTEXT_OVERFLOW"),
        (_RATE, "RATE_LIMIT"),
        (_OVERLOAD, "OVERLOADED"),
    ):
        if pattern.search(text):
            return code
    return "SERVER"


def error_text(body: object) -> str:
    """The provider's wording from an error body (an error object, a wrapper, or text)."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            return error_text(inner)
        if isinstance(inner, str) and "message" not in body:
            return inner
        message = next((str(body[k]) for k in ("message", "detail", "msg") if body.get(k)), "")
        tags = [str(body[k]) for k in ("type", "code") if body.get(k) not in (None, "")]
        if tags:
            message = f"{message} ({', '.join(tags)})" if message else ", ".join(tags)
        return message or jsonx.dumps_spaced_text(dict(body), ascii_only=False, lenient=True)
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    return "" if body is None else str(body)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> int | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date) in ms, if valid and positive."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = -1.0
        if ms > 0:
            return round(ms)
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return round(seconds * 1000) if seconds > 0 else None


def retry_after_ms(message: str) -> int | None:
    """Read back the ``[retry-after-ms=N]`` hint a failure message carries, if any."""
    match = _RETRY_HINT.search(message)
    return int(match.group(1)) if match else None


def retry_delay(message: str, backoff: float, *, cap: float = MAX_RETRY_AFTER) -> float:
    """Seconds to wait before retrying the failure ``message``: its Retry-After hint, else ``backoff``.

    The hint (``[retry-after-ms=N]``, from ``Retry-After`` or ``retry-after-ms``) replaces the
    policy's exponential ``backoff``, capped at ``cap``. A policy without delays (``backoff``
    of 0, as replay uses) stays instant: recorded hints are not waited for again.
    """
    if backoff <= 0:
        return 0.0
    hint = retry_after_ms(message)
    if hint is None:
        return backoff
    return min(hint / 1000, cap)


def scrub(text: str, secrets: Iterable[str], limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line, at most ``limit`` characters, with every secret replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def status_message(
    status: int, code: str, body_text: str, *, retry_ms: int | None = None, request_id: str | None = None
) -> str:
    """``HTTP 429: <provider wording> (<hint>) [retry-after-ms=N] [request-id=...]``."""
    message = f"HTTP {status}: {body_text or 'no error message'}"
    hint = HINTS.get(code)
    if hint:
        message += f" ({hint})"
    if retry_ms is not None:
        message += f" [retry-after-ms={retry_ms}]"
    if request_id:
        message += f" [request-id={request_id}]"
    return message

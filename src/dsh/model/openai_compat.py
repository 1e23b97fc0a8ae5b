"""OpenAICompatModel: the ``Model`` for any OpenAI-compatible streaming Chat Completions API.

One ``httpx2`` POST per call (``docs/decisions/2026-12-07-no-openai-sdk.md``: the SDK cost
0.8 s of CPU to import and walked every history value); the response body is read as raw
SSE (see ``docs/decisions/2026-11-30-openai-raw-sse.md``) so a stream that ends without
``[DONE]`` is caught instead of taken as the answer. This is the one place ``httpx2``
exceptions and HTTP error statuses are mapped: every provider failure ends the
stream with an error ``finish`` (partial chunks before it are kept); only cancellation and
programming errors propagate. The API key never appears in a chunk, a message or ``repr``,
nor does a password in the base URL (``https://user:pass@host`` is shown ``user:***@host``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit

import httpx2

from dsh.errors import MissingCredentialError, ModelError
from dsh.events import chunks as ck
from dsh.events.chunks import Chunk
from dsh.jsonx import JSONDecodeError, check_json, dumps_unchecked, loads
from dsh.model.base import ModelRequest
from dsh.model.failures import (
    MAX_MESSAGE,
    classify_status,
    classify_stream_error,
    error_text,
    parse_retry_after,
    scrub,
    status_message,
)
from dsh.model.openai_wire import StreamTranslator, WireMemo, request_body
from dsh.model.sse import SseDecoder
from dsh.model.urls import redact_url, url_password

_STREAM_HEADERS = {"Accept": "text/event-stream", "Content-Type": "application/json"}


class _Unsent(Exception):
    """The request never got a response: the transport error that stopped it (``cause``)."""

    def __init__(self, cause: httpx2.TransportError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Status(Exception):
    """The provider answered with an error status: the response, its error body and message."""

    def __init__(self, response: httpx2.Response, body: object, message: str) -> None:
        super().__init__(message)
        self.response = response
        self.body = body
        self.message = message


T = TypeVar("T")


class OpenAICompatModel:
    """A streaming Chat Completions model (DeepSeek by default) behind the ``Model`` Protocol.

    ``idle_timeout`` bounds the wait for response headers and for every read of the body
    (no bytes for that long: ``TIMEOUT``); the consumer's own processing time does not
    count. ``total_timeout`` bounds the whole call, from sending the request to the last
    byte, consumer time included (``TIMEOUT`` too): keep-alive comments or a trickle of
    deltas cannot hold a call forever. The default (10 minutes) leaves room for reasoning
    models that think for minutes before and while they answer.

    One ``stream`` call makes exactly one HTTP attempt (SDK retries are off). A refused
    connection before this model ever reached the provider is ``CONNECTION_REFUSED``, which
    the loop does not retry (nothing listens at the base URL: a configuration error, not a
    transient fault); once a call has reached it, a refusal is a restart in progress:
    ``CONNECTION``, retried. Close it with ``aclose()`` or ``async with``; a passed
    ``http_client`` stays the caller's to close.
    """

    __slots__ = (
        "_api_key",
        "_base_url",
        "_default_model",
        "_extra_body",
        "_http",
        "_idle",
        "_memo",
        "_owns_http",
        "_password",
        "_provider",
        "_reached",
        "_total",
        "_url",
    )

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str | None = None,
        provider: str = "deepseek",
        default_model: str | None = None,
        idle_timeout: float = 300.0,
        total_timeout: float = 600.0,
        connect_timeout: float = 10.0,
        http_client: httpx2.AsyncClient | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not api_key:
            raise MissingCredentialError(
                f"no API key for provider {provider!r}: set DEEPSEEK_API_KEY "
                f"(or DSH_API_KEY for {redact_url(base_url)})"
            )
        if not total_timeout > 0 or not idle_timeout > 0:
            raise ValueError(
                f"idle_timeout and total_timeout must be positive: {idle_timeout}, {total_timeout}"
            )
        self._provider = provider
        self._base_url = redact_url(scrub(base_url, [api_key], limit=2000))
        self._password = url_password(base_url)
        self._default_model = model or default_model
        self._idle = idle_timeout
        self._total = total_timeout
        self._reached = False
        self._extra_body = dict(extra_body or {})
        self._memo = WireMemo()  # the history mapped for the last request, for the next
        check_json(self._extra_body, "extra_body")
        self._owns_http = http_client is None
        self._api_key = api_key
        self._url = base_url.rstrip("/") + "/chat/completions"
        # A plain-http URL (a local server) never does TLS (no redirect is followed): no
        # certificate store is loaded for it (~30 ms, and a broken SSL_CERT_FILE would stop it).
        plain = urlsplit(base_url).scheme.lower() == "http"
        self._http = http_client or httpx2.AsyncClient(
            timeout=httpx2.Timeout(idle_timeout, connect=connect_timeout), verify=not plain
        )

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_name(self) -> str | None:
        """The model id of requests that name none (``model=``; ``default_model`` is its old name)."""
        return self._default_model

    @property
    def idle_timeout(self) -> float:
        return self._idle

    @property
    def total_timeout(self) -> float:
        return self._total

    def __repr__(self) -> str:
        return (
            f"OpenAICompatModel(provider={self._provider!r}, base_url={self._base_url!r}, "
            f"default_model={self._default_model!r})"
        )

    async def aclose(self) -> None:
        """Release the HTTP connection pool (unless the caller passed its own client)."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def secret_values(self) -> tuple[str, ...]:
        """The API key and the base URL's password (:class:`~dsh.model.HoldsSecrets`)."""
        return tuple(v for v in (self._api_key, self._password or "") if v)

    def _scrub(self, text: str, limit: int = MAX_MESSAGE) -> str:
        """``text`` on one line without the API key or the base URL's password."""
        secrets = [self._api_key] if self._api_key else []
        password = self._password
        if password:
            text = text.replace(f":{password}@", ":***@")
            if len(password) >= 4:  # a shorter one would mask ordinary words; it is masked in URLs
                secrets.append(password)
        return scrub(text, secrets, limit)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """One Chat Completions call as harness chunks, always ending in exactly one ``finish``."""
        model = request.model or self._default_model
        if not model:
            yield ck.error_finish("BAD_REQUEST", "no model name: set the request's model or default_model")
            return
        deadline = asyncio.get_running_loop().time() + self._total
        try:
            async with contextlib.aclosing(self._stream(request, model, deadline)) as chunks:
                async for chunk in chunks:
                    yield chunk
        except ModelError as exc:
            yield ck.error_finish(exc.code, self._scrub(exc.failure_message))
        except _Status as exc:
            self._reached = True
            yield self._status_failure(exc)
        except httpx2.TimeoutException as exc:
            yield self._failure("TIMEOUT", f"the request to the provider timed out ({type(exc).__name__})")
        except _Unsent as exc:
            if isinstance(exc.cause, httpx2.TimeoutException):
                yield self._failure(
                    "TIMEOUT", f"the request to the provider timed out ({type(exc.cause).__name__})"
                )
            else:
                yield self._connection_failure(exc.cause)
        except httpx2.TransportError as exc:
            yield self._failure("CONNECTION", f"the connection to the provider failed mid-stream: {exc}")
        except httpx2.HTTPError as exc:
            yield self._failure("UNKNOWN", f"the HTTP client failed: {exc}")

    async def _stream(
        self, request: ModelRequest, model: str, deadline: float
    ) -> AsyncGenerator[Chunk, None]:
        # The history, tools and settings are lossless JSON already (logged, or checked in
        # __init__): a second check would parse the whole body back (0.7 s at 100 k events).
        payload = dumps_unchecked(request_body(request, model, self._extra_body, memo=self._memo))
        headers = {**_STREAM_HEADERS, "Authorization": f"Bearer {self._api_key}"}
        translator = StreamTranslator()
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout_at(deadline):
                    response = await self._send(payload, headers)
            except TimeoutError as exc:
                raise self._deadline_error() from exc
            stack.push_async_callback(response.aclose)
            self._reached = True
            if response.status_code >= 400:
                raw = await self._within(response.aread(), deadline)
                raise _status_error(response, raw)
            content_type = response.headers.get("content-type", "")
            if "json" in content_type:
                raw = await self._within(response.aread(), deadline)
                raise _json_instead_of_stream(raw)
            decoder = SseDecoder()
            reads = await stack.enter_async_context(contextlib.aclosing(response.aiter_bytes()))
            done = False
            while not done:
                data = await self._within(anext(reads, None), deadline)
                try:
                    events = decoder.feed(data) if data is not None else decoder.close()
                except UnicodeDecodeError as exc:
                    raise ModelError("MALFORMED_RESPONSE", f"the stream is not UTF-8: {exc}") from exc
                for event in events:
                    if event.data.strip() == "[DONE]":
                        done = True
                        break
                    try:
                        payload = loads(event.data)
                    except JSONDecodeError as exc:
                        raise ModelError(
                            "MALFORMED_RESPONSE", f"the provider sent a data line that is not JSON: {exc}"
                        ) from exc
                    for chunk in translator.feed(payload):
                        yield chunk
                if data is None:
                    break
            if not done:
                raise ModelError(
                    "STREAM_CLOSED",
                    f"the stream ended without the [DONE] sentinel (content-type {content_type or 'none'})",
                )
        for chunk in translator.end():
            yield chunk

    async def _send(self, payload: bytes, headers: dict[str, str]) -> httpx2.Response:
        """POST the request and return the response once its headers are in (body unread)."""
        request = self._http.build_request("POST", self._url, content=payload, headers=headers)
        try:
            return await self._http.send(request, stream=True)
        except httpx2.TransportError as exc:
            raise _Unsent(exc) from exc

    async def _within(self, read: Awaitable[T], deadline: float) -> T:
        """Await one read of the body: at most ``idle_timeout``, and never past ``deadline``."""
        loop = asyncio.get_running_loop()
        idle_end = loop.time() + self._idle
        try:
            async with asyncio.timeout_at(min(idle_end, deadline)):
                return await read
        except TimeoutError as exc:
            if deadline <= idle_end:
                raise self._deadline_error() from exc
            raise ModelError("TIMEOUT", f"no bytes from the provider for {self._idle:g}s") from exc

    def _deadline_error(self) -> ModelError:
        return ModelError(
            "TIMEOUT",
            f"the model call did not finish within its overall deadline of {self._total:g}s (total_timeout)",
        )

    def _connection_failure(self, cause: httpx2.TransportError) -> Chunk:
        if _refused(cause):
            if not self._reached:
                return self._failure(
                    "CONNECTION_REFUSED",
                    f"cannot reach {self._base_url}: connection refused "
                    "(nothing listens there: check the base URL and that the server is running)",
                )
            return self._failure("CONNECTION", f"cannot reach {self._base_url}: connection refused ({cause})")
        return self._failure("CONNECTION", f"cannot reach {self._base_url}: {cause}")

    def _failure(self, code: str, message: str) -> Chunk:
        return ck.error_finish(code, self._scrub(message, limit=MAX_MESSAGE + 200))

    def _status_failure(self, exc: _Status) -> Chunk:
        status = exc.response.status_code
        text = self._scrub(error_text(exc.body) or exc.message)
        code = classify_status(status, text)
        headers = exc.response.headers
        request_id = headers.get("x-request-id") or headers.get("x-deepseek-request-id")
        message = status_message(
            status, code, text, retry_ms=parse_retry_after(headers), request_id=request_id
        )
        return self._failure(code, message)


def _refused(exc: BaseException) -> bool:
    """Whether a connection error was caused by a refused TCP connect (ECONNREFUSED)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        current = current.__cause__ or current.__context__
    return False


def _status_error(response: httpx2.Response, raw: bytes) -> _Status:
    """An error status as the provider sent it: its ``error`` object (or whole JSON body, or
    text) and a message naming the code."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body: object = loads(text)
    except JSONDecodeError:
        return _Status(response, text, text or f"Error code: {response.status_code}")
    data = body.get("error", body) if isinstance(body, Mapping) else body
    return _Status(response, data, f"Error code: {response.status_code} - {body}")


def _json_instead_of_stream(raw: bytes) -> ModelError:
    try:
        body = loads(raw)
    except JSONDecodeError:
        body = None
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        error = body["error"]
        return ModelError(
            classify_stream_error(error), f"provider error: {error_text(error) or 'no message'}"
        )
    return ModelError("MALFORMED_RESPONSE", "the provider answered with JSON instead of an event stream")

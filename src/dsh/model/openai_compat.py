"""OpenAICompatModel: the ``Model`` for any OpenAI-compatible streaming Chat Completions API.

The ``openai`` SDK builds, authenticates and sends the request and classifies HTTP errors;
the response body is read as raw SSE (see ``docs/decisions/2026-11-30-openai-raw-sse.md``)
so a stream that ends without ``[DONE]`` is caught instead of taken as the answer. This is
the one place ``openai``/``httpx2`` exceptions are mapped: every provider failure ends the
stream with an error ``finish`` (partial chunks before it are kept); only cancellation and
programming errors propagate. The API key never appears in a chunk, a message or ``repr``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from types import TracebackType
from typing import Any, Self

import httpx2
import openai

from dsh.errors import MissingCredentialError, ModelError
from dsh.events import chunks as ck
from dsh.events.chunks import Chunk
from dsh.jsonx import JSONDecodeError, loads
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
from dsh.model.openai_wire import StreamTranslator, request_body
from dsh.model.sse import SseDecoder

_STREAM_HEADERS = {"Accept": "text/event-stream"}


class OpenAICompatModel:
    """A streaming Chat Completions model (DeepSeek by default) behind the ``Model`` Protocol.

    ``idle_timeout`` bounds the wait for response headers and for every read of the body
    (no bytes for that long: ``TIMEOUT``); the consumer's own processing time does not
    count. One ``stream`` call makes exactly one HTTP attempt (SDK retries are off).
    Close it with ``aclose()`` or ``async with``; a passed ``http_client`` stays the
    caller's to close.
    """

    __slots__ = ("_base_url", "_client", "_default_model", "_extra_body", "_idle", "_owns_http", "_provider")

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        provider: str = "deepseek",
        default_model: str | None = None,
        idle_timeout: float = 300.0,
        connect_timeout: float = 10.0,
        http_client: httpx2.AsyncClient | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not api_key:
            raise MissingCredentialError(
                f"no API key for provider {provider!r}: set DEEPSEEK_API_KEY (or DSH_API_KEY for {base_url})"
            )
        self._provider = provider
        self._base_url = scrub(base_url, [api_key], limit=2000)
        self._default_model = default_model
        self._idle = idle_timeout
        self._extra_body = dict(extra_body or {})
        self._owns_http = http_client is None
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=openai.Timeout(idle_timeout, connect=connect_timeout),
            http_client=http_client,
        )

    @property
    def provider(self) -> str:
        return self._provider

    def __repr__(self) -> str:
        return (
            f"OpenAICompatModel(provider={self._provider!r}, base_url={self._base_url!r}, "
            f"default_model={self._default_model!r})"
        )

    async def aclose(self) -> None:
        """Release the HTTP connection pool (unless the caller passed its own client)."""
        if self._owns_http:
            await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _secrets(self) -> list[str]:
        key = self._client.api_key
        return [key] if isinstance(key, str) and key else []

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """One Chat Completions call as harness chunks, always ending in exactly one ``finish``."""
        model = request.model or self._default_model
        if not model:
            yield ck.error_finish("BAD_REQUEST", "no model name: set the request's model or default_model")
            return
        try:
            async with contextlib.aclosing(self._stream(request, model)) as chunks:
                async for chunk in chunks:
                    yield chunk
        except ModelError as exc:
            yield ck.error_finish(exc.code, scrub(exc.failure_message, self._secrets()))
        except openai.APIStatusError as exc:
            yield self._status_failure(exc)
        except (openai.APITimeoutError, httpx2.TimeoutException) as exc:
            yield self._failure("TIMEOUT", f"the request to the provider timed out ({type(exc).__name__})")
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            yield self._failure("CONNECTION", f"cannot reach {self._base_url}: {cause}")
        except httpx2.TransportError as exc:
            yield self._failure("CONNECTION", f"the connection to the provider failed mid-stream: {exc}")
        except openai.OpenAIError as exc:
            yield self._failure("UNKNOWN", f"the OpenAI client failed: {exc}")

    async def _stream(self, request: ModelRequest, model: str) -> AsyncGenerator[Chunk, None]:
        body = request_body(request, model, self._extra_body)
        messages = body.pop("messages")
        body.pop("model")
        body.pop("stream")
        translator = StreamTranslator()
        async with self._client.chat.completions.with_streaming_response.create(
            model=model, messages=messages, stream=True, extra_body=body, extra_headers=_STREAM_HEADERS
        ) as response:
            content_type = response.headers.get("content-type", "")
            if "json" in content_type:
                async with asyncio.timeout(self._idle):
                    raw = await response.read()
                raise _json_instead_of_stream(raw)
            decoder = SseDecoder()
            async with contextlib.aclosing(response.http_response.aiter_bytes()) as reads:
                done = False
                while not done:
                    data = await self._next_read(reads)
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

    async def _next_read(self, reads: AsyncIterator[bytes]) -> bytes | None:
        try:
            async with asyncio.timeout(self._idle):
                return await anext(reads, None)
        except TimeoutError as exc:
            raise ModelError("TIMEOUT", f"no bytes from the provider for {self._idle:g}s") from exc

    def _failure(self, code: str, message: str) -> Chunk:
        return ck.error_finish(code, scrub(message, self._secrets(), limit=MAX_MESSAGE + 200))

    def _status_failure(self, exc: openai.APIStatusError) -> Chunk:
        status = exc.status_code
        text = scrub(error_text(exc.body) or exc.message, self._secrets())
        code = classify_status(status, text)
        headers = exc.response.headers
        request_id = headers.get("x-request-id") or headers.get("x-deepseek-request-id")
        message = status_message(
            status, code, text, retry_ms=parse_retry_after(headers), request_id=request_id
        )
        return self._failure(code, message)


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

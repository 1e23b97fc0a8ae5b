"""Model calls end: the overall deadline, Retry-After as the retry delay, and refused connections.

All over real HTTP against the local test server on 127.0.0.1 (or a closed port on it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import time

import pytest

from dsh.events import chunks as ck
from dsh.loop import Agent, AgentConfig, RetryPolicy
from dsh.model.failures import MAX_RETRY_AFTER, retry_after_ms, retry_delay
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store import MemoryEventStore
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import Faults, Stall, http_error, stream_reply
from dsh.tools.registry import ToolRegistry
from tests.patience import patience

from .conftest import KEY, check_stream_shape, closed_port, collect, failure, request

# -- the overall deadline ---------------------------------------------------------------------


async def test_keep_alive_bytes_cannot_hold_a_call_past_its_deadline(server: OpenAICompatServer) -> None:
    """Comments every 0.1 s keep the idle timeout (2 s) from ever firing; the deadline ends the call."""
    server.enqueue(stream_reply(text="never", faults=Faults(keepalive_for=10.0, keepalive_every=0.1)))
    async with OpenAICompatModel(
        base_url=server.base_url, api_key=KEY, idle_timeout=2.0, total_timeout=0.8
    ) as model:
        start = time.monotonic()
        chunks = await collect(model, request())
        elapsed = time.monotonic() - start
    got = failure(chunks)
    assert got["code"] == "TIMEOUT"
    assert (
        got["message"] == "the model call did not finish within its overall deadline of 0.8s (total_timeout)"
    )
    assert elapsed > 0.7, elapsed  # not before its deadline (that it was the deadline: the message)


async def test_a_trickling_stream_keeps_its_partial_text_when_the_deadline_ends_it(
    server: OpenAICompatServer,
) -> None:
    server.enqueue(stream_reply(text=[f"t{i} " for i in range(100)], delay=0.05))
    async with OpenAICompatModel(
        base_url=server.base_url, api_key=KEY, idle_timeout=2.0, total_timeout=0.6
    ) as model:
        chunks = await collect(model, request())
    check_stream_shape(chunks)
    assert failure(chunks)["code"] == "TIMEOUT"
    text = "".join(c["text"] for c in chunks if c["type"] == "text-delta")
    assert text.startswith("t0 t1 ") and len(text) < 300


async def test_the_deadline_bounds_the_wait_for_headers(server: OpenAICompatServer) -> None:
    reply = stream_reply(text="late")
    server.enqueue(dataclasses.replace(reply, steps=(Stall(None), *reply.steps)))
    async with OpenAICompatModel(
        base_url=server.base_url, api_key=KEY, idle_timeout=5.0, total_timeout=0.5
    ) as model:
        chunks = await collect(model, request())
    # the deadline (0.5 s), not the idle timeout (5 s), ended it: the message says which
    assert failure(chunks)["code"] == "TIMEOUT" and "overall deadline" in failure(chunks)["message"]


async def test_a_call_within_its_deadline_is_untouched(server: OpenAICompatServer) -> None:
    server.enqueue(stream_reply(text=["a", "b"], delay=0.05, faults=Faults(keepalive_for=0.3)))
    async with OpenAICompatModel(
        base_url=server.base_url, api_key=KEY, idle_timeout=1.0, total_timeout=5.0
    ) as model:
        chunks = await collect(model, request())
    assert chunks[-1] == ck.finish("stop")


def test_the_default_deadline_suits_reasoning_models() -> None:
    model = OpenAICompatModel(base_url="http://127.0.0.1:1/v1", api_key=KEY)
    assert model.total_timeout == 600.0 and model.idle_timeout == 300.0
    with pytest.raises(ValueError, match="total_timeout"):
        OpenAICompatModel(base_url="http://127.0.0.1:1/v1", api_key=KEY, total_timeout=0)


# -- Retry-After ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([("Retry-After", "3")], 3000),
        ([("retry-after-ms", "1500"), ("Retry-After", "3")], 1500),
        ([("Retry-After", "0.4")], 400),
    ],
)
async def test_retry_after_headers_travel_in_the_failure(
    server: OpenAICompatServer, model: OpenAICompatModel, headers: list[tuple[str, str]], expected: int
) -> None:
    server.enqueue(http_error(429, "slow down", headers=headers))
    assert retry_after_ms(failure(await collect(model))["message"]) == expected


async def test_an_http_date_retry_after_travels_in_the_failure(
    server: OpenAICompatServer, model: OpenAICompatModel
) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.enqueue(http_error(503, "busy", retry_after=when))
    got = failure(await collect(model))
    assert got["code"] == "OVERLOADED"
    hint = retry_after_ms(got["message"])
    assert hint is not None and 25_000 <= hint <= 31_000


def test_retry_delay_uses_the_hint_capped_and_keeps_zero_delay_policies_instant() -> None:
    assert MAX_RETRY_AFTER == 60.0
    assert retry_delay("HTTP 429: slow [retry-after-ms=2500]", backoff=0.5) == 2.5
    assert retry_delay("HTTP 429: slow [retry-after-ms=100]", backoff=4.0) == 0.1
    assert retry_delay("HTTP 429: slow [retry-after-ms=86400000]", backoff=0.5) == MAX_RETRY_AFTER
    assert retry_delay("HTTP 429: slow [retry-after-ms=86400000]", backoff=0.5, cap=5.0) == 5.0
    assert retry_delay("HTTP 500: no hint", backoff=0.7) == 0.7
    assert retry_delay("HTTP 429: slow [retry-after-ms=2500]", backoff=0.0) == 0.0, "replay's NO_DELAY"


# -- refused connections ----------------------------------------------------------------------


async def test_a_refused_base_url_fails_fast_with_one_line() -> None:
    port = closed_port()
    async with OpenAICompatModel(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY) as model:
        async with asyncio.timeout(patience(30)):  # a hang guard: the refusal itself ends the call
            chunks = await collect(model, request())
    got = failure(chunks)
    assert got["code"] == "CONNECTION_REFUSED"
    assert got["message"] == (
        f"cannot reach http://127.0.0.1:{port}/v1: connection refused "
        "(nothing listens there: check the base URL and that the server is running)"
    )
    assert not ck.is_retryable("CONNECTION_REFUSED")


async def test_a_refusal_after_the_provider_answered_is_a_retryable_connection_failure() -> None:
    server = OpenAICompatServer([stream_reply(text="hi")])
    await server.start()
    url = server.base_url
    async with OpenAICompatModel(base_url=url, api_key=KEY) as model:
        assert (await collect(model, request()))[-1] == ck.finish("stop")
        await server.close()  # the provider restarts: nothing listens for a moment
        got = failure(await collect(model, request()))
    assert got["code"] == "CONNECTION" and "connection refused" in got["message"]
    assert ck.is_retryable(got["code"])


async def test_the_loop_gives_up_on_a_refused_base_url_after_one_attempt() -> None:
    """Before: 6 attempts over 16 s of backoff. Now one attempt, well under the first backoff."""
    store = MemoryEventStore()
    url = f"http://127.0.0.1:{closed_port()}/v1"
    async with OpenAICompatModel(base_url=url, api_key=KEY, default_model="m") as model:
        config = AgentConfig(model="m", retry=RetryPolicy(initial_delay=1.0))
        agent = await Agent.create(store, model=model, tools=ToolRegistry(), config=config, cwd="/tmp")
        result = await agent.run_turn("hi")
    assert result.failure is not None and result.failure["code"] == "CONNECTION_REFUSED"
    attempts = [e for e in agent.session.events if e.type == "assistant/attempt"]
    assert len(attempts) == 1, attempts  # no retry, so no backoff to wait out


async def test_the_loop_waits_the_retry_after_hint(server: OpenAICompatServer) -> None:
    """A 429 saying ``Retry-After: 1`` makes the loop wait about 1 s, not its 10 ms backoff."""
    server.enqueue(http_error(429, "slow down", retry_after="1"), stream_reply(text="ok"))
    store = MemoryEventStore()
    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY, default_model="m") as model:
        config = AgentConfig(model="m", retry=RetryPolicy(initial_delay=0.01, jitter=0.0))
        agent = await Agent.create(store, model=model, tools=ToolRegistry(), config=config, cwd="/tmp")
        result = await agent.run_turn("hi")
    assert result.ok and result.text == "ok"
    first, second = server.requests
    assert second.started_at - (first.ended_at or 0.0) >= 0.9

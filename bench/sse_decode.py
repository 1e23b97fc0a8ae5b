"""SSE decoding of one huge event: the decoder alone, and end to end over real HTTP.

A provider may send one very large ``data:`` line (a long tool-call argument in one delta).
The decoder must scan each byte once: feeding a 20 MB event in network-sized reads must take
time linear in its size, and must not hold the event loop for long.

    .venv/bin/python bench/sse_decode.py                 # 20 MB, reads of 16 KiB and 64 KiB
    .venv/bin/python bench/sse_decode.py --mb 5 --read 4096 --http

``--http`` also streams the event from the local OpenAI-compatible test server on
127.0.0.1 through ``OpenAICompatModel`` and reports the wall time and the longest stall of
the event loop (a ticker task measures it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from dsh.model.sse import SseDecoder


def event_bytes(megabytes: float) -> bytes:
    """One ``chat.completion.chunk`` SSE event whose content delta is ``megabytes`` long."""
    text = "x" * int(megabytes * 1_000_000)
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def decode(data: bytes, read: int) -> tuple[float, int]:
    """Seconds to feed ``data`` in ``read``-byte pieces, and the events decoded."""
    decoder = SseDecoder()
    events = 0
    start = time.perf_counter()
    for i in range(0, len(data), read):
        events += len(decoder.feed(data[i : i + read]))
    events += len(decoder.close())
    return time.perf_counter() - start, events


async def over_http(megabytes: float, read: int) -> tuple[float, float, int]:
    """Wall seconds, the longest event-loop stall (seconds) and the text length received."""
    from dsh.events.messages import user_message
    from dsh.model.base import ModelRequest
    from dsh.model.openai_compat import OpenAICompatModel
    from dsh.testing.server import OpenAICompatServer
    from dsh.testing.wire import Response, Write

    text = "x" * int(megabytes * 1_000_000)
    body = (
        b"data: "
        + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode()
        + b"\n\n"
        + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        + b"data: [DONE]\n\n"
    )
    steps = tuple(Write(body[i : i + read]) for i in range(0, len(body), read))
    response = Response(200, (("Content-Type", "text/event-stream"),), steps)

    worst = 0.0
    stop = False

    async def ticker() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not stop:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            worst = max(worst, now - last - 0.005)
            last = now

    server = OpenAICompatServer([response], max_stall=60.0)
    server.start_in_thread()  # its own loop: only the client's stalls are measured
    try:
        async with OpenAICompatModel(
            base_url=server.base_url, api_key="sk-bench", default_model="m", idle_timeout=60.0
        ) as model:
            tick = asyncio.create_task(ticker())
            start = time.perf_counter()
            received = 0
            request = ModelRequest(session_id="s", model="m", messages=[user_message("hi")])
            async for chunk in model.stream(request):
                if chunk["type"] == "text-delta":
                    received += len(chunk["text"])
                elif chunk["type"] == "finish" and chunk["reason"]["kind"] != "stop":
                    raise SystemExit(f"the call failed: {chunk}")
            seconds = time.perf_counter() - start
            stop = True
            await tick
    finally:
        server.stop_thread()
    return seconds, worst, received


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--read", type=int, action="append", help="read size in bytes (repeatable)")
    parser.add_argument("--http", action="store_true")
    args = parser.parse_args()
    reads = args.read or [16 * 1024, 64 * 1024]
    data = event_bytes(args.mb)
    print(f"one event of {len(data) / 1e6:.1f} MB")
    print("| path | read size | seconds | MB/s |")
    print("|---|---|---|---|")
    for read in reads:
        seconds, events = decode(data, read)
        assert events == 1, events
        print(f"| SseDecoder.feed | {read // 1024} KiB | {seconds:.3f} | {len(data) / 1e6 / seconds:.0f} |")
    if args.http:
        for read in reads:
            seconds, worst, received = asyncio.run(over_http(args.mb, read))
            assert received == int(args.mb * 1_000_000), received
            print(
                f"| OpenAICompatModel over HTTP | {read // 1024} KiB | {seconds:.3f} "
                f"| {len(data) / 1e6 / seconds:.0f} (longest loop stall {worst * 1000:.0f} ms) |"
            )


if __name__ == "__main__":
    main()

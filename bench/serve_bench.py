"""dsh serve vs VCR.py: per replayed streamed Chat Completions call through the ``openai`` SDK.

One conversation of N turns (each reply 40 ~8-char deltas, the W1 workload), driven by the
synchronous ``openai`` client, history growing turn by turn. Both tools record the same
calls against dsh's local OpenAI-compatible test server on 127.0.0.1 in the same run:

- dsh: ``dsh serve record`` (a proxy) writes the session log; replay = ``ReplayServer`` on a
  background thread, real HTTP on 127.0.0.1, each request routed, checked against the
  recording (the divergence check) and answered with one SSE event per recorded delta.
  Loading the directory and starting the server are timed separately.
  The same again through ``dsh serve replay`` as a separate process (no shared GIL);
  its "open" is the process start up to the listening line.
- VCR.py: ``use_cassette(record_mode="all")`` around the same calls, then replay with the
  server stopped (``record_mode="none"``, in-process: no socket at all). Opening the
  cassette is timed separately.

``in-process`` replays the same directory through ``ReplayTransport`` (the client's
``http_client`` answers from the same ``ReplayServer.answer``: routing, the check, the same
SSE bytes, the report), no socket: the like-for-like comparison with VCR.py's patched
transport. Its "open" is loading the directory.

``server`` is the replay server's own work per request (routing, the divergence check, the
SSE encoding; ``ReplayServer.handle`` on the bodies the SDK sends, no socket, no client), the
part of dsh's figure that dsh itself controls.

``async`` repeats both with ``openai.AsyncOpenAI``: it drains each stream after ``[DONE]``, so
HTTP/1.1 keep-alive reuses one connection, where the sync client closes the connection at
``[DONE]`` and opens a new one for the next call (a cost VCR.py, having no socket, never pays).

``floor`` is the same sync client against a server on a thread that answers each call with
the exact bytes dsh serves and does no work at all: the cost of any in-process HTTP server
to the client (the socket round trip, the SDK's reconnect), which VCR.py does not pay.

Every replayed call is verified: the client must see the recorded deltas, one SSE event
each, in order (``chunks kept``: dsh serves 40 content chunks per call; VCR.py replays the
body as recorded and the SDK re-splits it). Repeats are interleaved; medians reported.

    .venv/bin/python -m bench.serve_bench [--turns 20] [--repeats 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any

import httpx2
import openai
import vcr

from bench.common import Conversation, Stat, conversation, now
from dsh.http1 import Request
from dsh.serve.pytest_plugin import BackgroundServer
from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.serve.transport import ReplayTransport
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply

MODEL = "bench-model"


def _calls(client: openai.OpenAI, conv: Conversation) -> list[list[str]]:
    """The N turns; returns, per call, the content deltas the client received."""
    messages: list[dict[str, Any]] = []
    out = []
    for i in range(conv.turns):
        messages.append({"role": "user", "content": conv.users[i]})
        stream = client.chat.completions.create(model=MODEL, messages=messages, stream=True)  # type: ignore[arg-type]
        deltas = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
        out.append(deltas)
        messages.append({"role": "assistant", "content": "".join(deltas)})
    return out


async def _acalls(client: openai.AsyncOpenAI, conv: Conversation) -> list[list[str]]:
    """The same N turns through the async client (which drains each stream after ``[DONE]``, so
    HTTP/1.1 keep-alive reuses one connection; the sync client closes it and reconnects per call)."""
    messages: list[dict[str, Any]] = []
    out = []
    for i in range(conv.turns):
        messages.append({"role": "user", "content": conv.users[i]})
        stream = await client.chat.completions.create(model=MODEL, messages=messages, stream=True)  # type: ignore[arg-type]
        deltas = [
            c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content
        ]
        out.append(deltas)
        messages.append({"role": "assistant", "content": "".join(deltas)})
    return out


def _timed_async_calls(
    base_url: str, conv: Conversation, http: httpx2.AsyncClient | None = None
) -> tuple[float, list[list[str]]]:
    async def go() -> tuple[float, list[list[str]]]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, http_client=http)
        async with client:
            t0 = now()
            got = await _acalls(client, conv)
            return now() - t0, got

    return asyncio.run(go())


def replay_dsh_async(directory: Path, conv: Conversation) -> float:
    """Seconds for the N calls through ``openai.AsyncOpenAI`` against the in-thread server."""
    server = BackgroundServer(ReplayServer(directory))
    server.start()
    try:
        seconds, got = _timed_async_calls(server.base_url, conv)
    finally:
        report = server.stop()
    if got != conv.deltas or not report["ok"]:  # pragma: no cover - a broken bench
        raise RuntimeError(f"dsh serve replay served something else (async): {report}")
    return seconds


def replay_inprocess(directory: Path, conv: Conversation) -> tuple[float, float, int]:
    """(load seconds, seconds for the N calls, content chunks) through ``ReplayTransport``."""
    t0 = now()
    server = ReplayServer(directory)
    t_open = now() - t0
    http = httpx2.Client(transport=ReplayTransport(server))
    with openai.OpenAI(base_url="http://dsh-replay.invalid/v1", api_key="unused", max_retries=0,
                       http_client=http) as client:  # fmt: skip
        t0 = now()
        got = _calls(client, conv)
        t_calls = now() - t0
    if got != conv.deltas or not server.report()["ok"]:  # pragma: no cover - a broken bench
        raise RuntimeError(f"in-process replay served something else: {server.report()}")
    return t_open, t_calls, sum(map(len, got))


def replay_inprocess_async(directory: Path, conv: Conversation) -> float:
    server = ReplayServer(directory)
    http = httpx2.AsyncClient(transport=ReplayTransport(server))
    seconds, got = _timed_async_calls("http://dsh-replay.invalid/v1", conv, http)
    if got != conv.deltas or not server.report()["ok"]:  # pragma: no cover - a broken bench
        raise RuntimeError(f"in-process replay served something else (async): {server.report()}")
    return seconds


def replay_vcr_async(cassette: Path, conv: Conversation, base_url: str) -> float:
    with vcr.VCR().use_cassette(str(cassette), record_mode="none") as played:
        seconds, got = _timed_async_calls(base_url, conv)
        if not played.all_played:  # pragma: no cover - a broken bench
            raise RuntimeError("the cassette was not played to the end (async)")
    if ["".join(d) for d in got] != [conv.reply(i) for i in range(conv.turns)]:  # pragma: no cover
        raise RuntimeError("the cassette replayed something else (async)")
    return seconds


class _FixedBytes(asyncio.Protocol):
    """The floor: answers each request with the next of ``bodies`` and does nothing else."""

    def __init__(self, bodies: list[bytes], served: list[int]) -> None:
        self.bodies, self.served, self.buf = bodies, served, b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        length = 0
        for line in self.buf[:end].decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if len(self.buf) < end + 4 + length:
            return
        self.buf = self.buf[end + 4 + length :]
        body = self.bodies[self.served[0] % len(self.bodies)]
        self.served[0] += 1
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
        assert self.transport is not None
        self.transport.write(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def _served_bodies(directory: Path, conv: Conversation) -> list[bytes]:
    """The exact SSE bodies ``dsh serve replay`` answers the N calls with."""
    server = ReplayServer(directory)

    async def bodies() -> list[bytes]:
        out, messages = [], []
        for i in range(conv.turns):
            messages.append({"role": "user", "content": conv.users[i]})
            body = json.dumps({"messages": messages, "model": MODEL, "stream": True}).encode()
            out.append((await server.handle(Request("POST", "/v1/chat/completions", {}, body))).body)
            messages.append({"role": "assistant", "content": conv.reply(i)})
        return out

    return asyncio.run(bodies())


def replay_floor(bodies: list[bytes], conv: Conversation) -> float:
    """Seconds for the N calls against a server on a thread that answers dsh's bytes with no
    work at all (no routing, no check): what any in-process HTTP server costs the client."""
    loop = asyncio.new_event_loop()
    served = [0]
    server = loop.run_until_complete(loop.create_server(lambda: _FixedBytes(bodies, served), "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
            t0 = now()
            got = _calls(client, conv)
            seconds = now() - t0
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
    if got != conv.deltas:  # pragma: no cover - a broken bench
        raise RuntimeError("the floor server served something else")
    return seconds


def _upstream(conv: Conversation) -> OpenAICompatServer:
    return OpenAICompatServer([stream_reply(text=d) for d in conv.deltas])


def record_dsh(directory: Path, conv: Conversation) -> None:
    upstream = _upstream(conv)
    upstream.start_in_thread()
    try:
        proxy = BackgroundServer(RecordServer(upstream.base_url, directory))
        proxy.start()
        try:
            with openai.OpenAI(base_url=proxy.base_url, api_key="bench", max_retries=0) as client:
                got = _calls(client, conv)
        finally:
            proxy.stop()
    finally:
        upstream.stop_thread()
    if got != conv.deltas:  # pragma: no cover - a broken bench
        raise RuntimeError("recording through dsh serve record changed the deltas")


def record_vcr(cassette: Path, conv: Conversation) -> str:
    upstream = _upstream(conv)
    upstream.start_in_thread()
    try:
        with (
            openai.OpenAI(base_url=upstream.base_url, api_key="bench", max_retries=0) as client,
            vcr.VCR().use_cassette(str(cassette), record_mode="all"),
        ):
            _calls(client, conv)
        return upstream.base_url
    finally:
        upstream.stop_thread()


def replay_dsh(directory: Path, conv: Conversation) -> tuple[float, float, int]:
    """(load + start seconds, seconds for the N calls, content chunks received)."""
    t0 = now()
    server = BackgroundServer(ReplayServer(directory))
    server.start()
    t_open = now() - t0
    try:
        with openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0) as client:
            t0 = now()
            got = _calls(client, conv)
            t_calls = now() - t0
    finally:
        report = server.stop()
    if got != conv.deltas or not report["ok"]:  # pragma: no cover - a broken bench
        raise RuntimeError(f"dsh serve replay served something else: {report}")
    return t_open, t_calls, sum(map(len, got))


def replay_dsh_process(directory: Path, conv: Conversation) -> tuple[float, float, int]:
    """The same through ``dsh serve replay`` in its own process (as a user runs it)."""
    t0 = now()
    process = subprocess.Popen(
        [sys.executable, "-m", "dsh.cli", "serve", "replay", str(directory)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    base_url = process.stdout.readline().strip().rsplit(" on ", 1)[-1]
    token = process.stdout.readline().split("control token ", 1)[-1].split()[0]
    t_open = now() - t0
    try:
        with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0) as client:
            t0 = now()
            got = _calls(client, conv)
            t_calls = now() - t0
        request = urllib.request.Request(
            base_url.removesuffix("/v1") + "/_dsh/shutdown", data=b"", headers={"X-Dsh-Token": token}
        )
        urllib.request.urlopen(request, timeout=10).close()
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if got != conv.deltas or process.returncode != 0:  # pragma: no cover - a broken bench
        raise RuntimeError("dsh serve replay (process) served something else or exited non-zero")
    return t_open, t_calls, sum(map(len, got))


def server_work(directory: Path, conv: Conversation) -> float:
    """Seconds per request inside ``ReplayServer.handle`` for the N calls (a fresh server)."""
    messages: list[dict[str, Any]] = []
    bodies = []
    for i in range(conv.turns):
        messages.append({"role": "user", "content": conv.users[i]})
        bodies.append(json.dumps({"messages": messages, "model": MODEL, "stream": True}).encode())
        messages.append({"role": "assistant", "content": conv.reply(i)})
    server = ReplayServer(directory)

    async def calls() -> float:
        t0 = now()
        for body in bodies:
            reply = await server.handle(Request("POST", "/v1/chat/completions", {}, body))
            if reply.status != 200:  # pragma: no cover - a broken bench
                raise RuntimeError(f"dsh serve refused a recorded call: {reply.body!r}")
        return (now() - t0) / len(bodies)

    return asyncio.run(calls())


def replay_vcr(cassette: Path, conv: Conversation, base_url: str) -> tuple[float, float, int]:
    with openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0) as client:
        t0 = now()
        context = vcr.VCR().use_cassette(str(cassette), record_mode="none")
        cassette_obj = context.__enter__()
        t_open = now() - t0
        try:
            t0 = now()
            got = _calls(client, conv)
            t_calls = now() - t0
            if not cassette_obj.all_played:  # pragma: no cover - a broken bench
                raise RuntimeError("the cassette was not played to the end")
        finally:
            context.__exit__(None, None, None)
    if ["".join(d) for d in got] != [conv.reply(i) for i in range(conv.turns)]:  # pragma: no cover
        raise RuntimeError("the cassette replayed something else")
    return t_open, t_calls, sum(map(len, got))


def _targets(figures: dict[str, Stat], chunks: dict[str, int], conv: Conversation) -> list[dict[str, Any]]:
    """The target (per replayed streamed call no slower than VCR.py, every chunk kept) for each
    way dsh serves, against VCR.py measured in the same rounds."""
    every = sum(map(len, conv.deltas))
    out = []
    for name, ours, theirs, kept in [
        ("in-process (ReplayTransport), sync SDK", "inprocess_call", "vcr_call", "inprocess"),
        ("in-process (ReplayTransport), async SDK", "inprocess_async_call", "vcr_async_call", "inprocess"),
        ("HTTP, server on a thread, sync SDK", "dsh_call", "vcr_call", "dsh"),
        ("HTTP, server process, sync SDK", "dsh_process_call", "vcr_call", "dsh_process"),
        ("HTTP, server on a thread, async SDK", "dsh_async_call", "vcr_async_call", "dsh"),
    ]:
        mine, vcr_s = figures[ours].median, figures[theirs].median
        out.append({"target": f"dsh serve {name} <= VCR.py per call, every chunk kept",
                    "figure": f"{mine * 1e3:.2f} ms vs {vcr_s * 1e3:.2f} ms, {chunks[kept]}/{every} chunks",
                    "met": mine <= vcr_s and chunks[kept] == every})  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    conv = conversation(args.turns)
    names = ("dsh_call", "dsh_open", "dsh_process_call", "dsh_process_open", "vcr_call", "vcr_open", "server",
             "dsh_async_call", "vcr_async_call", "floor_call", "inprocess_call", "inprocess_open",
             "inprocess_async_call")  # fmt: skip
    figures: dict[str, Stat] = {k: Stat() for k in names}
    chunks: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="dsh-serve-bench-") as tmp:
        root = Path(tmp)
        record_dsh(root / "dsh", conv)
        base_url = record_vcr(root / "cassette.yaml", conv)
        bodies = _served_bodies(root / "dsh", conv)
        for _ in range(args.repeats):
            d_open, d_calls, chunks["dsh"] = replay_dsh(root / "dsh", conv)
            p_open, p_calls, chunks["dsh_process"] = replay_dsh_process(root / "dsh", conv)
            figures["dsh_process_open"].add(p_open)
            figures["dsh_process_call"].add(p_calls / conv.turns)
            v_open, v_calls, chunks["vcr"] = replay_vcr(root / "cassette.yaml", conv, base_url)
            i_open, i_calls, chunks["inprocess"] = replay_inprocess(root / "dsh", conv)
            figures["inprocess_open"].add(i_open)
            figures["inprocess_call"].add(i_calls / conv.turns)
            figures["inprocess_async_call"].add(replay_inprocess_async(root / "dsh", conv) / conv.turns)
            figures["dsh_open"].add(d_open)
            figures["dsh_call"].add(d_calls / conv.turns)
            figures["vcr_open"].add(v_open)
            figures["vcr_call"].add(v_calls / conv.turns)
            figures["server"].add(server_work(root / "dsh", conv))
            figures["floor_call"].add(replay_floor(bodies, conv) / conv.turns)
            figures["dsh_async_call"].add(replay_dsh_async(root / "dsh", conv) / conv.turns)
            vcr_async = replay_vcr_async(root / "cassette.yaml", conv, base_url)
            figures["vcr_async_call"].add(vcr_async / conv.turns)
    result = {
        "bench": "serve",
        "turns": conv.turns,
        "repeats": args.repeats,
        "deltas_per_call": len(conv.deltas[0]),
        "content_chunks_received": chunks,
        **{f"{k}_s": v.to_json() for k, v in figures.items()},
    }
    result["targets"] = _targets(figures, chunks, conv)
    print(json.dumps(result))
    d, v = figures["dsh_call"].median, figures["vcr_call"].median
    p = figures["dsh_process_call"].median
    print(
        f"per replayed streamed call: dsh serve (thread) {d * 1e3:.2f} ms ({chunks['dsh']} content chunks), "
        f"dsh serve replay (process) {p * 1e3:.2f} ms ({chunks['dsh_process']}), "
        f"VCR.py {v * 1e3:.2f} ms ({chunks['vcr']} content chunks); "
        f"dsh server's own work {figures['server'].median * 1e3:.2f} ms; "
        f"open: dsh {figures['dsh_open'].median * 1e3:.1f} ms, "
        f"VCR.py {figures['vcr_open'].median * 1e3:.1f} ms; async client: dsh serve (thread) "
        f"{figures['dsh_async_call'].median * 1e3:.2f} ms, "
        f"VCR.py {figures['vcr_async_call'].median * 1e3:.2f} ms; floor (a thread answering the same "
        f"bytes with no work) {figures['floor_call'].median * 1e3:.2f} ms; in-process (ReplayTransport): "
        f"{figures['inprocess_call'].median * 1e3:.2f} ms ({chunks['inprocess']} content chunks), async "
        f"{figures['inprocess_async_call'].median * 1e3:.2f} ms, open "
        f"{figures['inprocess_open'].median * 1e3:.1f} ms",
        file=sys.stderr,
    )
    for target in result["targets"]:
        verdict = "met" if target["met"] else "MISSED"
        print(f"target {verdict}: {target['target']} ({target['figure']})", file=sys.stderr)
    return result


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()

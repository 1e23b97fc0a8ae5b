"""dsh serve's dialects: a replayed streamed Responses / Messages call vs the Chat Completions path.

One conversation of N turns per dialect, each reply 40 ~8-char text deltas (the W1
workload), the history growing turn by turn, recorded through ``dsh serve record`` from a
scripted upstream on 127.0.0.1 (the same one for all three: it answers each path in its
dialect's own SSE shape). Replay is ``ReplayServer.answer`` on the bodies a client sends,
the part dsh controls: routing, the divergence check (the whole history every call), the
recorded answer (Chat Completions rebuilt from its chunks, the other dialects their exact
recorded events). ``events kept`` checks every replayed call carries every recorded event,
names and data, in order. Repeats are interleaved; medians (and minima) reported; the target is each
dialect within 10% of the Chat Completions figure per call. ``sdk`` is the same replay
through each dialect's own SDK in-process (``ReplayTransport``; sync ``openai`` /
``anthropic`` clients, every event iterated): dsh's work plus the SDK's own parsing, which
differs per SDK and is not dsh's to tune.

    .venv/bin/python -m bench.serve_dialects_bench [--turns 20] [--repeats 41] [--sdk-repeats 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

from dsh.http1 import Request
from dsh.serve.http import HttpServer, Reply
from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer

DELTAS = [f"word{i:03d} " for i in range(40)]


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(f"event: {n}\ndata: {json.dumps({'type': n, **d})}\n\n".encode() for n, d in events)


def _chat(n: int) -> bytes:
    head = {"id": f"c{n}", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    frames = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    frames += [{**head, "choices": [{"index": 0, "delta": {"content": d}}]} for d in DELTAS]
    frames.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(f"data: {json.dumps(f)}\n\n".encode() for f in frames) + b"data: [DONE]\n\n"


def _responses(n: int) -> bytes:
    rid, text = f"resp_{n}", "".join(DELTAS)
    item = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    done = {
        "id": rid,
        "object": "response",
        "status": "completed",
        "output": [item],
        "usage": {"input_tokens": 9, "output_tokens": 40},
    }
    return _sse(
        [
            ("response.created", {"response": {**done, "status": "in_progress", "output": []}}),
            ("response.output_item.added", {"output_index": 0, "item": {**item, "content": []}}),
            *[("response.output_text.delta", {**where, "delta": d}) for d in DELTAS],
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": done}),
        ]
    )


def _messages(n: int) -> bytes:
    start = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "m",
        "usage": {"input_tokens": 9, "output_tokens": 1},
    }
    return _sse(
        [
            ("message_start", {"message": start}),
            ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            *[
                ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": d}})
                for d in DELTAS
            ],
            ("content_block_stop", {"index": 0}),
            ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 40}}),
            ("message_stop", {}),
        ]
    )


SCRIPTS = {"/chat/completions": _chat, "/responses": _responses, "/messages": _messages}


async def _upstream(request: Request) -> Reply:
    return Reply(200, SCRIPTS[request.path.removeprefix("/v1")](len(request.body)), "text/event-stream")


def _bodies(dialect: str, turns: int) -> list[dict[str, Any]]:
    """The bodies a client sends, turn by turn, the whole history each time."""
    text = "".join(DELTAS)
    out: list[dict[str, Any]] = []
    history: list[Any] = []
    for turn in range(turns):
        ask = f"question {turn}"
        if dialect == "responses":
            history.append({"role": "user", "content": ask})
            out.append({"model": "m", "instructions": "Be brief.", "input": list(history), "stream": True})
            history.append(
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
            )
        elif dialect == "messages":
            history.append({"role": "user", "content": ask})
            out.append(
                {
                    "model": "m",
                    "system": "Be brief.",
                    "max_tokens": 512,
                    "messages": list(history),
                    "stream": True,
                }
            )
            history.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        else:
            history.append({"role": "user", "content": ask})
            out.append(
                {
                    "model": "m",
                    "messages": [{"role": "system", "content": "Be brief."}, *history],
                    "stream": True,
                }
            )
            history.append({"role": "assistant", "content": text})
    return out


PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


async def _record(directory: Path, dialect: str, bodies: list[dict[str, Any]]) -> list[bytes]:
    upstream = HttpServer(_upstream)
    await upstream.start()
    served = []
    try:
        async with RecordServer(upstream.base_url, directory) as proxy, httpx2.AsyncClient() as http:
            for body in bodies:
                reply = await http.post(proxy.base_url.removesuffix("/v1") + PATHS[dialect], json=body)
                served.append(reply.content)
    finally:
        await upstream.close()
    return served


def _replay(directory: Path, dialect: str, raw: list[bytes], recorded: list[bytes]) -> tuple[float, bool]:
    server = ReplayServer(directory)
    headers = {"content-type": "application/json"}
    start = time.perf_counter()
    out = []
    for body in raw:
        reply = server.answer(Request("POST", PATHS[dialect], headers, body))
        out.append(reply.body if reply.paced is None else b"".join(p for _, p in reply.paced))
    elapsed = (time.perf_counter() - start) / len(raw)
    kept = server.report()["ok"] and (dialect == "chat" or out == recorded)
    if dialect == "chat":  # rebuilt from chunks: every delta, one event each
        kept = kept and all(o.count(b'"content":"word') == len(DELTAS) for o in out)
    return elapsed, kept


def _sdk_call(dialect: str, client: Any, body: dict[str, Any]) -> int:
    """One streamed call through the dialect's own SDK; the number of events it saw."""
    kwargs = {k: v for k, v in body.items() if k != "stream"}
    if dialect == "chat":
        return sum(1 for _ in client.chat.completions.create(**kwargs, stream=True))
    if dialect == "responses":
        return sum(1 for _ in client.responses.create(**kwargs, stream=True))
    return sum(1 for _ in client.messages.create(**kwargs, stream=True))


def _replay_sdk(directory: Path, dialect: str, bodies: list[dict[str, Any]]) -> float:
    """Per call through the SDK in-process (``ReplayTransport``): dsh's work plus the SDK's parse."""
    import anthropic
    import openai

    from dsh.serve.transport import ReplayTransport

    server = ReplayServer(directory)
    http = httpx2.Client(transport=ReplayTransport(server))
    client: Any = (
        anthropic.Anthropic(base_url="http://replay.invalid", api_key="x", http_client=http, max_retries=0)
        if dialect == "messages"
        else openai.OpenAI(base_url="http://replay.invalid/v1", api_key="x", http_client=http, max_retries=0)
    )
    start = time.perf_counter()
    for body in bodies:
        _sdk_call(dialect, client, body)
    elapsed = (time.perf_counter() - start) / len(bodies)
    client.close()
    if not server.report()["ok"]:
        raise SystemExit(f"{dialect}: the SDK replay was refused: {server.report()['refused']}")
    return elapsed


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--sdk-repeats", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        setups = {}
        parsed: dict[str, list[dict[str, Any]]] = {}
        for dialect in PATHS:
            bodies = _bodies(dialect, args.turns)
            directory = Path(tmp) / dialect
            recorded = asyncio.run(_record(directory, dialect, bodies))
            setups[dialect] = (directory, [json.dumps(b).encode() for b in bodies], recorded)
            parsed[dialect] = bodies
        times: dict[str, list[float]] = {d: [] for d in PATHS}
        kept = dict.fromkeys(PATHS, True)
        sdk: dict[str, list[float]] = {d: [] for d in PATHS}
        for _ in range(args.repeats):
            for dialect, (directory, raw, recorded) in setups.items():
                elapsed, ok = _replay(directory, dialect, raw, recorded)
                times[dialect].append(elapsed)
                kept[dialect] = kept[dialect] and ok
        for _ in range(args.sdk_repeats):
            for dialect, (directory, _, _) in setups.items():
                sdk[dialect].append(_replay_sdk(directory, dialect, parsed[dialect]))
    chat = statistics.median(times["chat"])
    figures = {
        d: {
            "per_call_ms": round(statistics.median(t) * 1000, 3),
            "vs_chat": round(statistics.median(t) / chat, 3),
            "events_kept": kept[d],
            "min_ms": round(min(t) * 1000, 3),
            "min_vs_chat": round(min(t) / min(times["chat"]), 3),
            "within_10pct": statistics.median(t) <= chat * 1.10,
        }
        for d, t in times.items()
    }
    sdk_chat = statistics.median(sdk["chat"])
    for d, t in sdk.items():
        figures[d]["sdk_per_call_ms"] = round(statistics.median(t) * 1000, 3)
        figures[d]["sdk_vs_chat"] = round(statistics.median(t) / sdk_chat, 3)
    result = {
        "turns": args.turns,
        "repeats": args.repeats,
        "sdk_repeats": args.sdk_repeats,
        "deltas_per_call": len(DELTAS),
        "figures": figures,
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()

"""W2 — replay: a recorded session of N model calls, each streaming 40 text deltas.

- dsh: the recording is made by the real loop; replay = ``load_replay_model`` (read the log,
  derive the script) + a fresh agent (built-in and subagent tools, memory store as the
  scenario runner uses) running the N turns with the ``ReplayModel`` — every chunk served
  exactly as recorded, every event written to the store (encoded and checked). Also shown:
  the same replay into a durable SQLite store (two fsynced commits per call).
- VCR.py: the same N streamed Chat Completions calls recorded through the ``openai`` SDK
  against dsh's local OpenAI-compatible test server on 127.0.0.1, then replayed from the
  cassette with the server stopped. Opening the cassette is timed separately.
- floor: iterating the pre-built chunk lists in memory through an async generator.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Conversation, Stat, conversation, now
from bench.workload import MODEL, LeanModel, all_reply_chunks
from dsh import jsonx
from dsh.events.chunks import Chunk
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.replay.files import load_replay_model
from dsh.store import EventStore, LoadedSession
from dsh.store.logfile import encode_log
from dsh.store.memory import MemoryEventStore
from dsh.store.sqlite import SqliteEventStore
from dsh.subagents import standard_tools

CALLS = 50


async def record_scenario(directory: Path, conv: Conversation) -> None:
    """Record ``conv`` through the real loop into a scenario directory (``session.jsonl`` + input)."""
    directory.mkdir(parents=True, exist_ok=True)
    store = MemoryEventStore()
    agent = await Agent.create(
        store,
        model=LeanModel(all_reply_chunks(conv)),
        tools=standard_tools(),
        config=AgentConfig(model=MODEL, retry=NO_DELAY),
        cwd=directory,
    )
    for text in conv.users:
        await agent.run_turn(text)
    loaded = await store.load(agent.id)
    portable = LoadedSession(loaded.header.evolve(cwd="{{cwd}}"), 0, loaded.events)
    (directory / "session.jsonl").write_bytes(encode_log(portable))
    steps = [{"op": "prompt", "text": t} for t in conv.users]
    (directory / "input.json").write_bytes(jsonx.dumps({"steps": steps}))


async def replay_dsh(
    directory: Path, conv: Conversation, cwd: Path, store: EventStore | None = None, *, check: bool = True
) -> tuple[float, float, int]:
    """Replay the scenario through the loop: (open+derive seconds, total seconds, chunks served).

    ``check=False`` drops the per-call divergence check after loading (to show its cost)."""
    t0 = now()
    model, _ = load_replay_model(directory, cwd=cwd)
    if not check:
        for script in model.scripts:
            script.check = None
    t_open = now() - t0
    store = store if store is not None else MemoryEventStore()
    agent = await Agent.create(
        store,
        model=model,
        tools=standard_tools(),
        config=AgentConfig(model=MODEL, retry=NO_DELAY),
        cwd=cwd,
    )
    for text in conv.users:
        result = await agent.run_turn(text)
        if not result.ok:  # pragma: no cover - a broken bench
            raise RuntimeError(f"replay turn ended {result.reason}")
    model.assert_consumed()
    total = now() - t0
    await store.close()
    served = sum(len(e.data["stream"]["chunks"]) for e in agent.session.events if "stream" in e.data)
    return t_open, total, served


async def _iterate(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk


async def floor(scripts: list[list[Chunk]]) -> int:
    served = 0
    for script in scripts:
        out = [chunk async for chunk in _iterate(script)]
        served += len(out)
    return served


def record_cassette(path: Path, conv: Conversation) -> str:
    """Record the N streamed calls through the ``openai`` SDK against the local test server.

    Returns the base URL the calls went to (replay calls the same URL, server stopped)."""
    import openai
    import vcr

    from dsh.testing.server import OpenAICompatServer
    from dsh.testing.wire import stream_reply

    server = OpenAICompatServer([stream_reply(text=d) for d in conv.deltas])
    server.start_in_thread()
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="bench", max_retries=0)
        with vcr.VCR().use_cassette(str(path), record_mode="all"):
            for i in range(conv.turns):
                text = _call(client, conv.users[i])
                if text != conv.reply(i):  # pragma: no cover - a broken bench
                    raise RuntimeError("the test server streamed something else")
        client.close()
        return server.base_url
    finally:
        server.stop_thread()


def _call(client: Any, prompt: str) -> str:
    stream = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": prompt}], stream=True
    )
    parts: list[str] = []
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
    return "".join(parts)


def replay_cassette(path: Path, conv: Conversation, base_url: str) -> tuple[float, float]:
    """Replay the cassette with no server: (open seconds, seconds for the N calls)."""
    import openai
    import vcr

    client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)
    t0 = now()
    context = vcr.VCR().use_cassette(str(path), record_mode="none")
    cassette = context.__enter__()
    t_open = now() - t0
    try:
        t0 = now()
        for i in range(conv.turns):
            text = _call(client, conv.users[i])
            if text != conv.reply(i):  # pragma: no cover - a broken bench
                raise RuntimeError("the cassette replayed something else")
        t_calls = now() - t0
        if not cassette.all_played:  # pragma: no cover - a broken bench
            raise RuntimeError("the cassette was not played to the end")
    finally:
        context.__exit__(None, None, None)
        client.close()
    return t_open, t_calls


@dataclass(slots=True)
class W2Figures:
    calls: int
    dsh_per_call: Stat = field(default_factory=Stat)
    """Seconds per replayed call, reading and deriving the script included."""
    dsh_open: Stat = field(default_factory=Stat)
    dsh_loop_per_call: Stat = field(default_factory=Stat)
    dsh_unchecked_per_call: Stat = field(default_factory=Stat)
    """The same replay with the divergence check turned off (its cost = the difference)."""
    dsh_sqlite_per_call: Stat = field(default_factory=Stat)
    """The same replay writing to a durable SQLite store (two commits per call)."""
    vcr_per_call: Stat = field(default_factory=Stat)
    vcr_open: Stat = field(default_factory=Stat)
    floor_per_call: Stat = field(default_factory=Stat)
    chunks_per_call: float = 0.0
    vcr_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "chunks_per_call": self.chunks_per_call,
            "dsh_per_call_s": self.dsh_per_call.to_json(),
            "dsh_open_derive_s": self.dsh_open.to_json(),
            "dsh_loop_per_call_s": self.dsh_loop_per_call.to_json(),
            "dsh_unchecked_per_call_s": self.dsh_unchecked_per_call.to_json(),
            "dsh_sqlite_store_per_call_s": self.dsh_sqlite_per_call.to_json(),
            "vcr_per_call_s": self.vcr_per_call.to_json(),
            "vcr_cassette_open_s": self.vcr_open.to_json(),
            "floor_per_call_s": self.floor_per_call.to_json(),
            "vcr_error": self.vcr_error,
        }


def run_w2(rounds: int, workdir: Path, progress: Callable[[str], None], calls: int = CALLS) -> W2Figures:
    conv = conversation(calls, seed=11)
    figs = W2Figures(calls)
    root = Path(tempfile.mkdtemp(prefix="w2-", dir=workdir))
    try:
        progress("W2: recording the session through the loop and the cassette through the openai SDK")
        scenario = root / "scenario"
        asyncio.run(record_scenario(scenario, conv))
        cassette = root / "cassette.yaml"
        base_url = ""
        try:
            base_url = record_cassette(cassette, conv)
        except ImportError as exc:
            figs.vcr_error = f"VCR.py or openai missing: {exc}"
        scripts = all_reply_chunks(conv)
        for r in range(rounds):
            progress(f"W2 round {r + 1}/{rounds}")
            cwd = root / f"cwd-{r}"
            cwd.mkdir()
            t_open, total, served = asyncio.run(replay_dsh(scenario, conv, cwd))
            figs.dsh_open.add(t_open)
            figs.dsh_per_call.add(total / calls)
            figs.dsh_loop_per_call.add((total - t_open) / calls)
            figs.chunks_per_call = served / calls
            _, total, _ = asyncio.run(replay_dsh(scenario, conv, cwd, check=False))
            figs.dsh_unchecked_per_call.add(total / calls)
            sqlite_store = SqliteEventStore(root / f"replay-{r}.db")
            _, total, _ = asyncio.run(replay_dsh(scenario, conv, cwd, sqlite_store))
            figs.dsh_sqlite_per_call.add(total / calls)
            if figs.vcr_error is None:
                v_open, v_calls = replay_cassette(cassette, conv, base_url)
                figs.vcr_open.add(v_open)
                figs.vcr_per_call.add(v_calls / calls)
            t0 = now()
            asyncio.run(floor(scripts))
            figs.floor_per_call.add((now() - t0) / calls)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return figs

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
import gc
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.common import Conversation, Stat, conversation, fmt_range, now
from bench.workload import MODEL, LeanModel, all_reply_chunks
from dsh import jsonx
from dsh.events.chunks import Chunk
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.replay.files import load_replay_model
from dsh.replay.model import ReplayModel
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
    await model.aclose()
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


# -- issue 40, item 3: replay at scale -------------------------------------------------------

SCALE_SIZES = (50, 500, 5000)
OPEN_TARGET_S = 0.3
"""Open + derive of 5,000 recorded calls."""
PER_CALL_TARGET_S = 0.45e-3
"""Per replayed call at N = 50 (W2's target)."""
FLATNESS = 1.2
"""Per call at N = 5,000 within this factor of N = 50."""


@dataclass(slots=True)
class ScaleFigures:
    """One N: CPU seconds of the process (``time.process_time``: on a shared machine a
    neighbour moves wall times more than the differences measured)."""

    calls: int
    open_derive: Stat = field(default_factory=Stat)
    """``load_replay_model``: read and decode the recording, derive the script and its checks."""
    floor_open: Stat = field(default_factory=Stat)
    """Read the recording's bytes and ``orjson.loads`` every line: what any reader pays."""
    per_call: Stat = field(default_factory=Stat)
    """The whole replay (open + derive + the loop serving and checking every call) ÷ N."""
    floor_per_call: Stat = field(default_factory=Stat)
    """Iterating the pre-built chunk lists through an async generator, per call."""

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "open_derive_s": self.open_derive.to_json(),
            "floor_open_s": self.floor_open.to_json(),
            "per_call_s": self.per_call.to_json(),
            "floor_per_call_s": self.floor_per_call.to_json(),
        }


def _cpu(fn: Callable[[], Any]) -> float:
    """CPU seconds of ``fn()``, the collector emptied first: a figure does not pay for the
    garbage of the one before it. (When a replay's agent was a reference cycle, each 5,000-call
    round left ~165 k objects that the next open's frozen heap kept from the collector, and the
    later rounds, floors included, ran 2× slower; see ``dsh.loop.weak``.)"""
    gc.collect()
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def _open_kept(directory: Path, cwd: Path, kept: list[ReplayModel]) -> None:
    """Open the replay and keep it past the timing: freeing the recording is no part of open."""
    kept.append(load_replay_model(directory, cwd=cwd)[0])


def _parse_lines(directory: Path) -> None:
    for path in sorted(directory.glob("session*.jsonl")):
        for line in path.read_bytes().splitlines():
            orjson.loads(line)


def run_w2_scale(
    rounds: int, workdir: Path, progress: Callable[[str], None], sizes: tuple[int, ...] = SCALE_SIZES
) -> list[ScaleFigures]:
    """Open + derive and the whole replay of N recorded calls, per N, with their floors."""
    out = []
    root = Path(tempfile.mkdtemp(prefix="w2-scale-", dir=workdir))
    try:
        for n in sizes:
            conv = conversation(n, seed=11)
            scenario = root / f"scenario-{n}"
            progress(f"W2 scale: recording {n} calls through the loop")
            asyncio.run(record_scenario(scenario, conv))
            scripts = all_reply_chunks(conv)
            figs = ScaleFigures(n)
            warm = root / f"cwd-{n}-warm"  # first use (imports, compiled patterns) is no call's cost
            warm.mkdir()
            asyncio.run(replay_dsh(scenario, conv, warm))
            for r in range(rounds):
                progress(f"W2 scale: N = {n}, round {r + 1}/{rounds}")
                cwd = root / f"cwd-{n}-{r}"
                cwd.mkdir()
                figs.floor_open.add(_cpu(lambda s=scenario: _parse_lines(s)))
                opened: list[ReplayModel] = []
                figs.open_derive.add(_cpu(lambda s=scenario, c=cwd, o=opened: _open_kept(s, c, o)))
                asyncio.run(opened[0].aclose())
                del opened
                whole = _cpu(lambda s=scenario, c=cwd, v=conv: asyncio.run(replay_dsh(s, v, c)))
                figs.per_call.add(whole / n)
                figs.floor_per_call.add(_cpu(lambda p=scripts: asyncio.run(floor(p))) / n)
            out.append(figs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def scale_table(figures: list[ScaleFigures]) -> str:
    """The Markdown table and the three verdicts."""
    ms = 1000.0
    rows = [
        "| N calls | open + derive | floor: read + parse | × floor | per call, whole replay | floor per call "
        "| per call ÷ N = 50 |",
        "|---|---|---|---|---|---|---|",
    ]
    base = next((f.per_call.median for f in figures if f.calls == SCALE_SIZES[0]), None)
    for f in figures:
        ratio = f"{f.per_call.median / base:.2f}" if base else "—"
        rows.append(
            f"| {f.calls:,} | {fmt_range(f.open_derive, 'ms')} | {fmt_range(f.floor_open, 'ms')} "
            f"| {f.open_derive.median / f.floor_open.median:.1f} | {f.per_call.median * ms:.3f} ms "
            f"| {f.floor_per_call.median * ms:.4f} ms | {ratio} |"
        )
    by_n = {f.calls: f for f in figures}
    verdicts = []
    if 5000 in by_n:
        got = by_n[5000].open_derive.median
        verdicts.append(
            _verdict(f"open + derive of 5,000 calls {got:.3f} s", got <= OPEN_TARGET_S, "≤ 0.3 s")
        )
    if 50 in by_n:
        got = by_n[50].per_call.median
        verdicts.append(
            _verdict(f"per call at N = 50 {got * ms:.3f} ms", got <= PER_CALL_TARGET_S, "≤ 0.45 ms")
        )
    if 50 in by_n and 5000 in by_n:
        got = by_n[5000].per_call.median / by_n[50].per_call.median
        verdicts.append(_verdict(f"per call at N = 5,000 ÷ N = 50: {got:.2f}", got <= FLATNESS, "≤ 1.2"))
    return "\n".join([*rows, "", *verdicts])


def _verdict(figure: str, met: bool, target: str) -> str:
    return f"- {figure}: {'met' if met else 'MISSED'} (target {target})"


if __name__ == "__main__":
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        description="W2 at scale: replay open + derive and per-call cost at N calls"
    )
    parser.add_argument("--sizes", default=",".join(map(str, SCALE_SIZES)))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="w2-scale-") as tmp:
        found = run_w2_scale(args.rounds, Path(tmp), lambda m: print(m, file=sys.stderr), sizes)
    print(scale_table(found))

"""Red team, SIGKILL: kill the loop at random moments on every store; no acknowledged turn is lost.

For each store (``sqlite:PATH``, ``jsonl:DIR``, ``jsonl+zstd:DIR`` (``--stores jsonl-zstd``)
and, when reachable, PostgreSQL in a scratch schema), one session lives through N kills.
Each round starts a worker process that creates (first round) or resumes (``Agent.resume``,
which closes a crash-interrupted turn) the session
and runs turns in a loop through ``OpenAICompatModel`` against the local test server
(``dsh.testing.server.OpenAICompatServer``, run here on 127.0.0.1): short streamed replies,
every third turn a ``bash`` call, so tools run too. The worker prints ``ACK <session> <turn>
<kind>`` after each ``run_turn`` returns (the turn is checkpointed by then). The parent
SIGKILLs it at a random moment 10–400 ms after it printed ``START`` (right before
create/resume, so some kills land in the resume's repair), then checks with a fresh store
handle that the log loads, seqs are contiguous, every ACKed turn is there with its
``turn/end`` (same kind), no turn is ended twice and only the last turn may be open. Every
``--cli-every``-th round runs the real CLI instead (``dsh run --json --resume ID --wait 5``;
its ``result`` line is the ACK; stderr must never show a traceback). A final round resumes
without a kill and must exit 0 after one more turn.

    .venv/bin/python bench/redteam_kill.py                 # 40 kills per store
    .venv/bin/python bench/redteam_kill.py --quick         # 10 kills per store
    .venv/bin/python bench/redteam_kill.py --kills 40 --stores sqlite,jsonl --json kill.json

Exits 1 if an acknowledged turn was lost or any check failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-redteam-kill-not-a-secret"
MODEL = "test-model"
STRIPPED = ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL", "DSH_MODEL", "DSH_STORE")
START_TIMEOUT = 60.0
"""Seconds a worker may take to import dsh and print START on this busy machine."""


# -- the worker (a subprocess: python bench/redteam_kill.py --worker ...) --------------------


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _worker(url: str, sid: str, base_url: str, workspace: str, create: bool, turns: int) -> None:
    from dsh.loop import Agent, AgentConfig
    from dsh.model.openai_compat import OpenAICompatModel
    from dsh.store.url import open_store
    from dsh.subagents import standard_tools

    store = open_store(url)
    model = OpenAICompatModel(base_url=base_url, api_key=KEY, default_model=MODEL, idle_timeout=20.0)
    tools = standard_tools()
    config = AgentConfig(model=MODEL)
    _say("START")
    if create:
        agent = await Agent.create(
            store, model=model, tools=tools, config=config, cwd=workspace, session_id=sid
        )
    else:
        agent = await Agent.resume(store, sid, model=model, tools=tools, config=config, lease_wait=10.0)
    _say(f"READY {agent.id} {agent.session.last_turn()}")
    done = 0
    while turns <= 0 or done < turns:
        turn = agent.session.last_turn() + 1
        prompt = f"turn {turn}: run a tool" if turn % 3 == 0 else f"turn {turn}: say something short"
        result = await agent.run_turn(prompt)
        _say(f"ACK {result.session_id} {result.turn} {result.reason.get('kind')}")
        done += 1
    await agent.aclose()
    await store.close()
    await model.aclose()


# -- the model server ------------------------------------------------------------------------


def _handler(delay: float) -> Callable[[Any], Any]:
    from dsh.testing.wire import WireToolCall, split_text, stream_reply

    def handle(request: Any) -> Any:
        messages = request.messages
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return stream_reply(text=split_text("the tool ran; that is all.", 6), delay=delay)
        prompt = str(last.get("content") or "")
        if "run a tool" in prompt:
            arguments = json.dumps({"command": "echo tool-ran; sleep 0.05", "description": "echo"})
            call = WireToolCall.split(f"call-{request.index}", "bash", arguments, 3)
            return stream_reply(text="running it", tool_calls=[call], delay=delay)
        return stream_reply(text=split_text(f"a short reply to {prompt[:20]}", 8), delay=delay)

    return handle


# -- one store -------------------------------------------------------------------------------


@dataclass
class StoreResult:
    store: str
    kills: int = 0
    survived: int = 0
    acked: int = 0
    lost: int = 0
    kind_mismatch: int = 0
    resume_failures: int = 0
    cli_rounds: int = 0
    cli_tracebacks: int = 0
    killed_before_ready: int = 0
    interrupted_closed: int = 0
    repairs: int = 0
    tool_results: int = 0
    turns_in_log: int = 0
    events_in_log: int = 0
    max_resume_s: float = 0.0
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)


@dataclass
class Round:
    lines: list[str]
    killed: bool
    timed_out: bool
    returncode: int | None
    stderr: str
    start_to_ready: float | None


def _reader(stream: TextIO, out: queue.Queue[tuple[float, str | None]]) -> None:
    for line in stream:
        out.put((time.monotonic(), line.rstrip("\n")))
    out.put((time.monotonic(), None))


def _play_round(
    argv: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    kill_after: float | None,
    is_base: Callable[[str], bool],
    is_ready: Callable[[str], bool],
    timeout: float = 180.0,
) -> Round:
    """Run ``argv``; SIGKILL it ``kill_after`` seconds after the first line ``is_base`` accepts.

    Every line it printed is returned, also those still in the pipe when it was killed.
    """
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        lines: queue.Queue[tuple[float, str | None]] = queue.Queue()
        thread = threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True)
        thread.start()
        seen: list[str] = []
        base: float | None = None
        ready: float | None = None
        kill_at: float | None = None
        start_deadline = time.monotonic() + START_TIMEOUT
        end_deadline = time.monotonic() + timeout
        killed = timed_out = False
        while True:
            now = time.monotonic()
            until = start_deadline if base is None else kill_at if kill_at is not None else end_deadline
            if now >= until:
                killed = True
                timed_out = kill_at is None or base is None
                os.kill(proc.pid, signal.SIGKILL)
                break
            try:
                at, line = lines.get(timeout=until - now)
            except queue.Empty:
                continue
            if line is None:
                break
            seen.append(line)
            if base is None and is_base(line):
                base = at
                if kill_after is not None:
                    kill_at = at + kill_after
            if ready is None and is_ready(line):
                ready = at
        returncode = proc.wait(timeout=60)
        thread.join(timeout=10)
        while True:  # what it printed before the kill is still in the queue
            try:
                _at, line = lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                seen.append(line)
        err.seek(0)
        stderr = err.read()
    start_to_ready = None if base is None or ready is None else ready - base
    return Round(seen, killed, timed_out, returncode, stderr, start_to_ready)


async def _load(url: str, sid: str) -> Any:
    from dsh.store.url import open_store

    store = open_store(url)
    try:
        return await store.load(sid)
    finally:
        await store.close()


def _verify(url: str, sid: str, acked: dict[int, str], result: StoreResult, label: str) -> bool:
    """Check the stored log against every acknowledged turn; record problems; True when sound."""
    try:
        loaded = asyncio.run(_load(url, sid))
    except Exception as exc:
        result.problems.append(f"{label}: load failed: {type(exc).__name__}: {exc}")
        return False
    events = loaded.events
    ok = True
    if [e.seq for e in events] != list(range(len(events))):
        result.problems.append(f"{label}: seqs not contiguous")
        ok = False
    starts = [e.data["turn"] for e in events if e.type == "turn/start"]
    ends: dict[int, list[str]] = {}
    for e in events:
        if e.type == "turn/end":
            ends.setdefault(e.data["turn"], []).append(e.data["reason"]["kind"])
    if starts != sorted(set(starts)):
        result.problems.append(f"{label}: turn numbers repeat or go back: {starts[-5:]}")
        ok = False
    twice = [t for t, kinds in ends.items() if len(kinds) > 1]
    if twice:
        result.problems.append(f"{label}: turns ended twice: {twice}")
        ok = False
    still_open = [t for t in starts if t not in ends]
    if still_open and still_open != [starts[-1]]:
        result.problems.append(f"{label}: turns left open before the last: {still_open}")
        ok = False
    lost = [t for t in acked if t not in ends]
    if lost:
        result.problems.append(f"{label}: acknowledged turns missing their turn/end: {lost}")
        ok = False
    mismatch = [t for t, kind in acked.items() if t in ends and ends[t][0] != kind]
    if mismatch:
        result.problems.append(f"{label}: acknowledged turns stored with another kind: {mismatch}")
        ok = False
    result.lost = len(lost)  # cumulative: acked holds every acknowledged turn so far
    result.kind_mismatch = len(mismatch)
    result.interrupted_closed = sum(1 for kinds in ends.values() if kinds[0] == "interrupted")
    result.repairs = sum(1 for e in events if e.type == "session/repaired")
    result.tool_results = sum(1 for e in events if e.type == "tool/result")
    result.turns_in_log = len(starts)
    result.events_in_log = len(events)
    return ok


def _parse_acks(lines: Sequence[str], sid: str, cli: bool) -> tuple[dict[int, str], int | None, list[str]]:
    """(acknowledged turn → kind, the last turn READY reported, problems) from a round's stdout."""
    acks: dict[int, str] = {}
    ready: int | None = None
    problems: list[str] = []
    for line in lines:
        if cli:
            try:
                obj = json.loads(line)
            except ValueError:
                problems.append(f"non-JSON stdout line: {line[:80]!r}")
                continue
            if obj.get("type") == "result":
                if obj.get("sessionId") != sid:
                    problems.append(f"result for another session {obj.get('sessionId')}")
                acks[int(obj["turn"])] = str(obj["reason"]["kind"])
            continue
        parts = line.split()
        if parts[:1] == ["READY"]:
            if parts[1] != sid:
                problems.append(f"resumed another session {parts[1]}")
            ready = int(parts[2])
        elif parts[:1] == ["ACK"]:
            if parts[1] != sid:
                problems.append(f"ACK for another session {parts[1]}")
            acks[int(parts[2])] = parts[3]
    return acks, ready, problems


def run_store(
    name: str, url: str, args: argparse.Namespace, base_url: str, work: Path, rng: random.Random
) -> StoreResult:
    from dsh.ids import new_session_id

    result = StoreResult(name)
    workspace = work / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    env.update(
        {
            "DSH_STORE": url,
            "DSH_API_KEY": KEY,
            "XDG_DATA_HOME": str(work / "data"),
            "DSH_SPILL_DIR": str(work / "spill"),
            "NO_COLOR": "1",
            "PYTHONUTF8": "1",
        }
    )
    sid = new_session_id()
    acked: dict[int, str] = {}
    window = (args.min_ms / 1000, args.max_ms / 1000)
    started = time.monotonic()
    previous_sound: bool | None = None
    worker = [sys.executable, str(Path(__file__).resolve()), "--worker", url, sid, base_url, str(workspace)]
    for n in range(args.kills + 1):
        final = n == args.kills
        cli = not final and n > 0 and args.cli_every > 0 and n % args.cli_every == 0
        label = f"{name} round {n + 1}{' (cli)' if cli else ''}{' (final)' if final else ''}"
        if cli:
            prompt = f"cli round {n}: run a tool" if n % 2 else f"cli round {n}: say something short"
            argv = [
                sys.executable,
                "-m",
                "dsh.cli",
                "run",
                prompt,
                "--json",
                "--resume",
                sid,
                "--wait",
                "10",
                "--base-url",
                base_url,
                "--model",
                MODEL,
            ]
            rnd = _play_round(argv, env, workspace, rng.uniform(*window), lambda _l: True, lambda _l: True)
            result.cli_rounds += 1
            if "Traceback" in rnd.stderr:
                result.cli_tracebacks += 1
                result.problems.append(f"{label}: traceback on stderr: {rnd.stderr.strip()[-300:]}")
        else:
            argv = [*worker, "--create" if n == 0 else "--resume", "--turns", "1" if final else "0"]
            rnd = _play_round(
                argv,
                env,
                workspace,
                None if final else rng.uniform(*window),
                lambda line: line == "START",
                lambda line: line.startswith("READY"),
            )
            if rnd.start_to_ready is not None and n > 0:
                result.max_resume_s = max(result.max_resume_s, rnd.start_to_ready)
        acks, ready, problems = _parse_acks(rnd.lines, sid, cli)
        problems = [f"{label}: {p}" for p in problems]
        resumed = True
        if rnd.killed and not rnd.timed_out:
            result.kills += 1
        if rnd.timed_out:
            resumed = False
            problems.append(f"{label}: hung (no START/first line, or no end): {rnd.stderr.strip()[-300:]}")
        if not cli and ready is None and not rnd.killed:
            resumed = False
            problems.append(
                f"{label}: worker exited {rnd.returncode} before READY: {rnd.stderr.strip()[-300:]}"
            )
        elif not cli and ready is None:
            result.killed_before_ready += 1
        if ready is not None and acked and ready < max(acked):
            resumed = False
            problems.append(f"{label}: resumed at turn {ready}, below the acknowledged {max(acked)}")
        if not rnd.killed and rnd.returncode != 0:
            resumed = False
            problems.append(f"{label}: exited {rnd.returncode}: {rnd.stderr.strip()[-300:]}")
        if cli and acks and acked and min(acks) <= max(acked):
            resumed = False
            problems.append(f"{label}: the CLI ran turn {min(acks)}, not after the acknowledged {max(acked)}")
        if final and not acks:
            resumed = False
            problems.append(f"{label}: the final resume acknowledged no turn")
        if not resumed:
            result.resume_failures += 1
        if previous_sound is not None and previous_sound and resumed:
            result.survived += 1
        result.acked += len(acks)
        acked.update(acks)
        result.problems.extend(problems)
        count = len(result.problems)
        sound = _verify(url, sid, acked, result, label) and not problems
        # this round's kill is survived once the next round resumes the sound log
        previous_sound = sound if rnd.killed and not rnd.timed_out else None
        if args.verbose:
            print(
                f"  {label}: {len(acks)} acked, killed={rnd.killed}, rc={rnd.returncode}, "
                f"problems={len(result.problems) - count + len(problems)}",
                file=sys.stderr,
            )
    result.wall_s = time.monotonic() - started
    return result


# -- stores and report -----------------------------------------------------------------------


def _postgres(url: str) -> tuple[str, Callable[[], None]] | str:
    try:
        from dsh.store.postgres_testing import drop_schema, new_schema_name, unreachable_reason, with_schema
    except ImportError as exc:
        return f"psycopg not installed: {exc}"
    reason = unreachable_reason(url)
    if reason is not None:
        return reason
    schema = new_schema_name("dsh_redteam")
    return with_schema(url, schema), lambda: drop_schema(url, schema)


def table(results: Sequence[StoreResult]) -> str:
    head = (
        "| store | SIGKILLs | survived | acked turns | acked lost | resume failures | cli rounds "
        "| cli tracebacks | killed before READY | interrupted turns closed | torn tails repaired "
        "| tool results | events in log | max resume s | wall s |"
    )
    rows = [head, "|" + "---|" * 15]
    for r in results:
        rows.append(
            f"| {r.store} | {r.kills} | {r.survived} | {r.acked} | {r.lost} | {r.resume_failures} "
            f"| {r.cli_rounds} | {r.cli_tracebacks} | {r.killed_before_ready} | {r.interrupted_closed} "
            f"| {r.repairs} "
            f"| {r.tool_results} | {r.events_in_log} | {r.max_resume_s:.2f} | {r.wall_s:.1f} |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=40, help="SIGKILLs per store (default 40)")
    parser.add_argument("--quick", action="store_true", help="10 kills per store")
    parser.add_argument(
        "--stores", default="sqlite,jsonl,postgres", help="comma-separated: sqlite,jsonl,jsonl-zstd,postgres"
    )
    parser.add_argument("--postgres", default=None, help="server URL (default: the tests' server)")
    parser.add_argument("--min-ms", type=float, default=10.0)
    parser.add_argument("--max-ms", type=float, default=400.0)
    parser.add_argument(
        "--cli-every", type=int, default=5, help="every Nth round runs dsh run --resume (0: never)"
    )
    parser.add_argument("--delay", type=float, default=0.004, help="seconds between streamed SSE events")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the stores here")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--worker", nargs=4, metavar=("URL", "SID", "BASE_URL", "CWD"), help=argparse.SUPPRESS
    )
    parser.add_argument("--create", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        url, sid, base_url, cwd = args.worker
        asyncio.run(_worker(url, sid, base_url, cwd, args.create, args.turns))
        return 0
    if args.quick:
        args.kills = 10
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)

    from dsh.testing.server import OpenAICompatServer

    work = args.workdir or Path(tempfile.mkdtemp(prefix="dsh-redteam-kill-"))
    work.mkdir(parents=True, exist_ok=True)
    results: list[StoreResult] = []
    skipped: dict[str, str] = {}
    server = OpenAICompatServer(handler=_handler(args.delay))
    server.start_in_thread()
    try:
        for name in [s.strip() for s in args.stores.split(",") if s.strip()]:
            cleanup: Callable[[], None] | None = None
            if name == "sqlite":
                url = f"sqlite:{work / 'sqlite' / 'sessions.db'}"
            elif name == "jsonl":
                url = f"jsonl:{work / 'jsonl' / 'sessions'}"
            elif name == "jsonl-zstd":
                url = f"jsonl+zstd:{work / 'jsonl-zstd' / 'sessions'}"
            elif name == "postgres":
                from dsh.store.postgres_testing import server_url

                found = _postgres(args.postgres or server_url())
                if isinstance(found, str):
                    skipped[name] = found
                    print(f"postgres skipped: {found}", file=sys.stderr)
                    continue
                url, cleanup = found
            else:
                parser.error(f"unknown store {name!r}")
            print(f"{name}: {args.kills} kills ...", file=sys.stderr)
            try:
                results.append(run_store(name, url, args, server.base_url, work / f"{name}-home", rng))
            finally:
                if cleanup is not None and args.workdir is None:
                    with contextlib.suppress(Exception):
                        cleanup()
            r = results[-1]
            print(
                f"{name}: {r.survived}/{r.kills} survived, {r.acked} acked, {r.lost} lost, {r.wall_s:.1f} s",
                file=sys.stderr,
            )
    finally:
        server.stop_thread()
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"seed {seed}, kill window {args.min_ms:g}–{args.max_ms:g} ms after START, "
        f"`dsh run --resume` every {args.cli_every} rounds, {len(server.requests)} model requests\n"
    )
    print(table(results))
    for name, reason in skipped.items():
        print(f"\n{name}: skipped ({reason})")
    problems = [p for r in results for p in r.problems]
    if problems:
        print("\nproblems:")
        for p in problems[:50]:
            print(f"- {p}")
    if args.json is not None:
        args.json.write_text(
            json.dumps({"seed": seed, "stores": [asdict(r) for r in results], "skipped": skipped}, indent=2)
        )
    failed = (
        any(r.lost or r.kind_mismatch or r.resume_failures or r.cli_tracebacks for r in results) or problems
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

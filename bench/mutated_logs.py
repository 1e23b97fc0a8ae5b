"""Mutated logs: every bad input is one line, never a traceback.

Takes recorded logs (the original's version-0 ``session*.jsonl`` under
``../shared/fixtures/dsh-upstream`` and the bundled version-2 scenarios), derives N mutants
from them deterministically (byte flips, truncations, type swaps at a random JSON path,
deep nesting, dropped / duplicated / swapped lines) and runs each through the real CLI:

- ``dsh log inspect FILE`` and ``dsh sessions import FILE`` (a fresh SQLite store each);
- for a mutant that imports: ``dsh sessions show ID``, ``dsh sessions export ID``; with
  ``--resume``, ``dsh run --resume ID`` against the local test server on 127.0.0.1 (the
  loop projecting the mutated history and sending it); with ``--replay``, ``dsh replay`` of
  the mutant's scenario (only single-session scenarios whose recording makes no tool call,
  so replaying a mutant never runs a command).

A run passes when it exits 0, or exits non-zero with exactly one stderr line
``dsh: error: ...``; anything escaping as an exception is a traceback. The commands run
in-process (Typer's runner, so an escaping exception is caught as what would have been a
traceback), split over worker processes; ``--subprocess N`` re-runs N sampled mutants as
real ``dsh`` processes and checks stderr has no ``Traceback``.

    .venv/bin/python bench/mutated_logs.py --count 3000 --resume --replay
    .venv/bin/python bench/mutated_logs.py --count 300 --subprocess 30 --show-failures

Exits 1 if any traceback (or a multi-line error) was seen.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT.parent / "shared" / "fixtures" / "dsh-upstream"
SCENARIOS = ROOT / "src" / "dsh" / "snapshot" / "scenarios"

KINDS = ("flip", "truncate", "swap", "nest", "lines")


def source_logs() -> list[Path]:
    """The recorded logs mutants are made from (sorted, so a seed always means the same set)."""
    logs = sorted(UPSTREAM.glob("*/session*.jsonl")) + sorted(SCENARIOS.glob("*/session*.jsonl"))
    if not logs:
        raise SystemExit(f"no recorded logs under {UPSTREAM} or {SCENARIOS}")
    return logs


# -- mutations ------------------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in value.items()}
    out = list(value)
    out[head] = _replace(out[head], rest, new)
    return out


def _nested(depth: int, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def _swap_value(old: Any, rng: random.Random) -> Any:
    candidates: list[Any] = [
        None,
        True,
        0,
        -1,
        2**70,
        1.5,
        "",
        "x",
        "3",
        [],
        [1],
        {},
        {"type": 1},
        [[[[]]]],
    ]
    if isinstance(old, str):
        candidates += [len(old), [old], {"text": old}]
    if isinstance(old, int) and not isinstance(old, bool):
        candidates += [str(old), float(old), [old], old + 10**6]
    if isinstance(old, dict):
        candidates += [list(old.values()), json.dumps(old)]
    if isinstance(old, list):
        candidates += [{str(i): v for i, v in enumerate(old)}, json.dumps(old), old[:1]]
    choice = rng.choice(candidates)
    return choice if choice != old or type(choice) is not type(old) else None


def mutate(data: bytes, kind: str, rng: random.Random) -> bytes:
    """One mutant of a log's bytes."""
    lines = data.split(b"\n")
    body = [i for i, line in enumerate(lines) if line.strip()]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.choice((1, 1, 1, 2, 4))):
            pos = rng.randrange(len(out))
            out[pos] = rng.choice((out[pos] ^ (1 << rng.randrange(8)), rng.randrange(256)))
        return bytes(out)
    if kind == "truncate":
        cut = rng.randrange(len(data))
        if rng.random() < 0.3:  # cut at a line boundary, keeping or dropping the newline
            cut = data.rfind(b"\n", 0, cut) + (1 if rng.random() < 0.5 else 0)
        return data[: max(cut, 0)]
    if kind == "lines":
        op = rng.choice(("drop", "dup", "swap", "blank", "junk"))
        n = rng.choice(body)
        m = rng.choice(body)
        if op == "drop":
            del lines[n]
        elif op == "dup":
            lines.insert(n, lines[n])
        elif op == "swap":
            lines[n], lines[m] = lines[m], lines[n]
        elif op == "blank":
            lines.insert(n, b"")
        else:
            lines.insert(n, rng.choice((b"null", b"[]", b'"x"', b"{}", b'{"type":"turn/start"}')))
        return b"\n".join(lines)
    n = rng.choice(body[1:] or body) if rng.random() < 0.92 else body[0]
    obj = json.loads(lines[n])
    paths = list(_paths(obj))
    # Bias towards the fields projections read: the envelope and the first levels of data.
    shallow = [p for p in paths if len(p) <= 3]
    path = rng.choice(shallow if shallow and rng.random() < 0.6 else paths)
    if kind == "swap":
        new_line = json.dumps(_replace(obj, path, _swap_value(_get(obj, path), rng)))
    else:  # nest
        depth = rng.choice((40, 100, 200, 600, 1000, 1030, 1500, 5000))
        marker = "\u0000NESTED\u0000"
        new_line = json.dumps(_replace(obj, path, marker)).replace(json.dumps(marker), _nested(depth, rng))
    lines[n] = new_line.encode()
    return b"\n".join(lines)


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


@dataclass(frozen=True, slots=True)
class Mutant:
    index: int
    source: str
    kind: str
    data: bytes
    scenario: Path | None = None
    """The recording's directory when it can be replayed without running tools."""


def _replayable(path: Path) -> Path | None:
    """The scenario directory of ``path`` if it has one session and no tool call, else ``None``."""
    logs = list(path.parent.glob("session*.jsonl"))
    if path.name != "session.jsonl" or len(logs) != 1 or b'"tool/call"' in path.read_bytes():
        return None
    return path.parent if (path.parent / "input.json").exists() else None


def mutants(count: int, seed: int) -> list[Mutant]:
    rng = random.Random(seed)
    logs = [(p, str(p.relative_to(p.parent.parent.parent)), p.read_bytes()) for p in source_logs()]
    out: list[Mutant] = []
    for i in range(count):
        path, name, data = logs[i % len(logs)]
        kind = KINDS[(i // len(logs)) % len(KINDS)]
        out.append(Mutant(i, name, kind, mutate(data, kind, rng), _replayable(path)))
    return out


# -- running ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    index: int
    kind: str
    source: str
    results: list[tuple[str, str, str]] = field(default_factory=list)
    """``(command, verdict, detail)``; verdict: ok, error, report, traceback, multiline."""


_ERROR_LINE = re.compile(r"^dsh: error: [^\n]+\n?$")


def _verdict(
    exit_code: int, stderr: str, exception: BaseException | None, stdout: str = ""
) -> tuple[str, str]:
    """ok (exit 0), error (one ``dsh: error:`` line), report (``dsh replay``'s own mismatch
    report on stdout; stderr holds at most the scenario's warnings), traceback, or multiline
    (anything else on stderr)."""
    if exception is not None and not isinstance(exception, SystemExit):
        return "traceback", f"{type(exception).__name__}: {str(exception)[:300]}"
    errors = [line for line in stderr.splitlines() if line.startswith("dsh: error:")]
    if exit_code == 0:
        return "ok", ""
    if stdout.rstrip().endswith("replay failed") and "Traceback" not in stderr and not errors:
        return "report", stdout.strip().splitlines()[0][:300]  # (stderr: the scenario's own warnings)
    if len(errors) == 1 and "Traceback" not in stderr:
        other = [line for line in stderr.splitlines() if line and not line.startswith("dsh: ")]
        if not other:
            return "error", errors[0][:300]
    return "multiline", stderr[-600:]


class _ModelServer:
    """The local OpenAI-compatible server for ``--resume`` (one per worker)."""

    def __init__(self) -> None:
        from dsh.testing import OpenAICompatServer, stream_reply

        self.server = OpenAICompatServer(handler=lambda _request: stream_reply(text="OK"))
        self.server.start_in_thread()

    @property
    def base_url(self) -> str:
        return self.server.base_url


_SERVER: _ModelServer | None = None


def _runner() -> Any:
    """Typer's test runner, building the click command of the app once (not per invocation)."""
    import typer.testing

    testing: Any = typer.testing  # a private helper, so the module is used untyped here
    if not hasattr(testing._get_command, "cache_info"):
        testing._get_command = functools.cache(testing._get_command)
    return typer.testing.CliRunner()


def _run_one(mutant: Mutant, resume: bool, replay: bool) -> Outcome:
    from dsh.cli.app import app

    runner = _runner()
    outcome = Outcome(mutant.index, mutant.kind, mutant.source)
    env = {"DSH_STORE": "", "DEEPSEEK_API_KEY": "", "DSH_API_KEY": ""}

    def cli(name: str, args: Sequence[str]) -> tuple[int, str]:
        result = runner.invoke(app, list(args), env=env, catch_exceptions=True)
        verdict, detail = _verdict(result.exit_code, result.stderr, result.exception, result.stdout)
        outcome.results.append((name, verdict, detail))
        return result.exit_code, result.stdout

    with tempfile.TemporaryDirectory(prefix="dsh-mutant-") as tmp:
        path = Path(tmp) / "session.jsonl"
        path.write_bytes(mutant.data)
        store = f"sqlite:{tmp}/store.db"
        cli("log inspect", ["log", "inspect", str(path)])
        code, out = cli("sessions import", ["sessions", "import", "--store", store, "--json", str(path)])
        if code != 0:
            return outcome
        try:
            session_id = json.loads(out)[0]["id"]
        except (ValueError, LookupError, TypeError):
            outcome.results.append(
                ("sessions import", "multiline", f"unreadable --json output {out[:200]!r}")
            )
            return outcome
        cli("sessions show", ["sessions", "show", "--store", store, session_id])
        cli("sessions export", ["sessions", "export", "--store", store, session_id, "-o", f"{tmp}/out.jsonl"])
        if resume:
            global _SERVER
            if _SERVER is None:
                _SERVER = _ModelServer()
            args = ["run", "--store", store, "--resume", session_id, "--json"]
            args += ["--base-url", _SERVER.base_url, "--api-key", "sk-mutant", "--model", "m", "hello"]
            cli("run --resume", args)
        if replay and mutant.scenario is not None:
            scenario = Path(tmp) / "scenario"
            shutil.copytree(mutant.scenario, scenario)
            (scenario / "session.jsonl").write_bytes(mutant.data)
            cli("replay", ["replay", "--store", "memory:", str(scenario)])
    return outcome


def _worker(job: tuple[list[Mutant], bool, bool]) -> list[Outcome]:
    batch, resume, replay = job
    with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
        return [_run_one(m, resume, replay) for m in batch]


def _subprocess_check(sample: Sequence[Mutant]) -> list[tuple[int, str, str]]:
    """Run ``dsh log inspect`` / ``dsh sessions import`` as real processes; return any tracebacks."""
    bad: list[tuple[int, str, str]] = []
    dsh = str(Path(sys.executable).with_name("dsh"))
    for mutant in sample:
        with tempfile.TemporaryDirectory(prefix="dsh-mutant-") as tmp:
            path = Path(tmp) / "session.jsonl"
            path.write_bytes(mutant.data)
            for args in (
                ["log", "inspect", str(path)],
                ["sessions", "import", "--store", f"sqlite:{tmp}/s.db", str(path)],
            ):
                proc = subprocess.run([dsh, *args], capture_output=True, text=True, timeout=60, check=False)
                verdict, _ = _verdict(proc.returncode, proc.stderr, None)
                if "Traceback" in proc.stderr or verdict == "multiline":
                    bad.append((mutant.index, " ".join(args[:2]), proc.stderr[-400:]))
    return bad


def run(count: int, seed: int, jobs: int, resume: bool, replay: bool = False) -> tuple[list[Outcome], float]:
    all_mutants = mutants(count, seed)
    batches = [all_mutants[i::jobs] for i in range(jobs)]
    start = time.perf_counter()
    if jobs == 1:
        outcomes = _worker((batches[0], resume, replay))
    else:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            jobs_ = [(b, resume, replay) for b in batches]
            outcomes = [o for part in pool.map(_worker, jobs_) for o in part]
    outcomes.sort(key=lambda o: o.index)
    return outcomes, time.perf_counter() - start


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    verdicts: Counter[tuple[str, str]] = Counter()
    by_kind: Counter[tuple[str, str]] = Counter()
    for outcome in outcomes:
        for command, verdict, _ in outcome.results:
            verdicts[(command, verdict)] += 1
            by_kind[(outcome.kind, verdict)] += 1
    bad = [(o, r) for o in outcomes for r in o.results if r[1] in ("traceback", "multiline")]
    return {"verdicts": verdicts, "by_kind": by_kind, "bad": bad}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--resume", action="store_true", help="also dsh run --resume every imported mutant")
    parser.add_argument("--replay", action="store_true", help="also dsh replay tool-free mutants")
    parser.add_argument("--subprocess", type=int, default=0, help="re-check N sampled mutants as processes")
    parser.add_argument("--show-failures", action="store_true")
    args = parser.parse_args(argv)
    outcomes, seconds = run(args.count, args.seed, args.jobs, args.resume, args.replay)
    summary = summarize(outcomes)
    runs = sum(summary["verdicts"].values())
    print(f"{len(outcomes)} mutants, {runs} command runs in {seconds:.1f}s (seed {args.seed})")
    columns = ("ok", "error", "report", "traceback", "multiline")
    header = "| ok | one-line error | replay report | traceback | multi-line |"
    print("| command " + header)
    print("|---" * 6 + "|")
    commands = sorted(
        {c for c, _ in summary["verdicts"]},
        key=lambda c: [
            "log inspect",
            "sessions import",
            "sessions show",
            "sessions export",
            "run --resume",
            "replay",
        ].index(c),
    )
    for command in commands:
        row = [summary["verdicts"][(command, v)] for v in columns]
        print(f"| {command} | " + " | ".join(map(str, row)) + " |")
    print("| mutation " + header)
    print("|---" * 6 + "|")
    for kind in KINDS:
        row = [summary["by_kind"][(kind, v)] for v in columns]
        print(f"| {kind} | " + " | ".join(map(str, row)) + " |")
    bad = summary["bad"]
    tracebacks = sum(1 for _, r in bad if r[1] == "traceback")
    print(f"tracebacks: {tracebacks}; multi-line errors: {len(bad) - tracebacks}")
    if args.show_failures:
        seen: set[str] = set()
        for outcome, (command, verdict, detail) in bad:
            key = re.sub(r"\d+", "N", detail)[:120]
            if key in seen:
                continue
            seen.add(key)
            print(f"  #{outcome.index} {outcome.kind} {outcome.source} {command} {verdict}: {detail}")
    failed = bool(bad)
    if args.subprocess:
        sample = random.Random(args.seed).sample(
            mutants(args.count, args.seed), min(args.subprocess, args.count)
        )
        process_bad = _subprocess_check(sample)
        print(f"subprocess check: {len(sample)} mutants, {len(process_bad)} with a traceback")
        for index, command, tail in process_bad[:10]:
            print(f"  #{index} {command}: {tail}")
        failed = failed or bool(process_bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

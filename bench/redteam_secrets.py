"""Red team, secrets: the provider key never reaches a tool, an output, a store or the provider.

With ``DSH_API_KEY`` / ``DEEPSEEK_API_KEY`` set to a unique marker (``sk-marker-<32 hex>``),
12 scenarios run through the real CLI (``python -m dsh.cli run``) against the local test
server (``dsh.testing.server.OpenAICompatServer`` on 127.0.0.1). The model calls ``bash``
with ``env``, ``printenv``, ``/proc/self/environ``, a Python dump of ``os.environ``, the
shell's ``set``, a spilled long result; a ``subagent`` / ``subagent_fork`` child runs
``env``; and the provider fails: a 401 whose message echoes the ``Authorization`` header, a
connection dropped mid-stream (before and after a tool result), a refused connection.

Each run is a fresh home (store, workspace, spill dir, temp dir): ``dsh run PROMPT --json``
(a new session), then ``dsh run PROMPT --resume ID`` (the live view; its request carries the
whole stored history), then ``dsh sessions list --json``, ``dsh sessions tree``, and for every
session ``dsh sessions export ID`` and ``dsh sessions show ID --events --json``. Runs
alternate SQLite and JSONL stores and which variable holds the key (``DSH_API_KEY``,
``DEEPSEEK_API_KEY``, both). Then the marker is counted in every place: stdout (``--json``
events, live view, export, show, list/tree), stderr, the store's files (SQLite bytes, plus the
zlib-compressed event payloads inflated, since large payloads are stored compressed; JSONL
files), spill files, every other file of the home, and every request the server received:
bodies, headers other than ``Authorization``, and the ``Authorization`` header itself (the one
legitimate place, counted separately). ``tail8`` counts the marker's last 8 characters (a
masked key that keeps its end).

``--extra`` adds probes outside the 12 that read the dsh process itself from its tool's child
(``/proc/$PPID/environ``; the key given by ``--api-key`` and read from ``/proc/$PPID/cmdline``),
and the environ of a shell that launched dsh holding the key: same-user process
introspection, which stripping the child's environment cannot stop (the output redaction
does). ``--sandbox`` / ``--backend`` pick the session's mode and kernel sandbox.

    .venv/bin/python bench/redteam_secrets.py                  # 12 scenarios x 3 runs
    .venv/bin/python bench/redteam_secrets.py --runs 1 --extra --show-leaks

Exits 1 if the marker was found anywhere but the Authorization header.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Faults, Response, WireToolCall, http_error, split_text, stream_reply

ROOT = Path(__file__).resolve().parent.parent
MODEL = "test-model"
STRIPPED = ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL", "DSH_MODEL", "DSH_STORE")
PY = sys.executable
CANARY = "<canary>"
"""Stands for the value of a non-secret variable (``DSH_REDTEAM_CANARY``) that ``env`` must show."""


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    what: str
    command: str | None = None
    """The ``bash`` command the model calls (or the child calls, for a delegation)."""
    tool: str = "bash"
    """``bash``, ``subagent`` or ``subagent_fork``."""
    fault: str | None = None
    """``401-echo``, ``drop``, ``refused``."""
    evidence: str = CANARY
    """Text proving the scenario did what it says (in an export or on stderr)."""
    key_flag: bool = False
    """Give the key as ``--api-key`` instead of the environment."""
    extra: bool = False
    shell: bool = False
    """Launch dsh from a ``bash`` that holds the key in its own environment (and stays dsh's
    parent): the launching shell a command can read under Landlock and ``danger-full-access``."""


ANCESTORS = (
    "p=$$; while [ \"$p\" -gt 1 ]; do cat /proc/$p/{file} | tr '\\0' '\\n'; "
    "p=$(cut -d' ' -f4 /proc/$p/stat); done"
)
"""Reads ``/proc/<pid>/{file}`` of the shell and each of its ancestors up to init."""

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("env", "bash: env", "env"),
    Scenario(
        "printenv-dsh",
        "bash: printenv DSH_API_KEY",
        'printenv DSH_API_KEY; echo "exit=$?"',
        evidence="exit=1",
    ),
    Scenario(
        "printenv-deepseek",
        "bash: printenv DEEPSEEK_API_KEY",
        'printenv DEEPSEEK_API_KEY; echo "exit=$?"',
        evidence="exit=1",
    ),
    Scenario(
        "proc-self-environ",
        "bash: cat /proc/self/environ | tr '\\0' '\\n'",
        "cat /proc/self/environ | tr '\\0' '\\n'",
    ),
    Scenario(
        "python-environ", "bash: python -c print(os.environ)", f"{PY} -c 'import os; print(dict(os.environ))'"
    ),
    Scenario("shell-set", "bash: set; export -p", "set; export -p"),
    Scenario(
        "spill-env",
        "bash: 400 KB, then env (spilled to a file)",
        "head -c 400000 /dev/zero | tr '\\0' x; echo; env",
    ),
    Scenario("subagent-env", "subagent child runs env", "env", tool="subagent"),
    Scenario("fork-env", "subagent_fork child runs env", "env", tool="subagent_fork"),
    Scenario(
        "401-echo",
        "401 whose message echoes the Authorization header",
        fault="401-echo",
        evidence="Incorrect API key provided",
    ),
    Scenario(
        "drop", "connection dropped mid-stream, before and after an env tool result", "env", fault="drop"
    ),
    Scenario(
        "refused",
        "connection refused (nothing listens on the base URL)",
        fault="refused",
        evidence="dsh: error:",
    ),
    Scenario(
        "parent-environ",
        "bash: the environ of every ancestor in /proc (the dsh process among them)",
        ANCESTORS.format(file="environ"),
        extra=True,
    ),
    Scenario(
        "shell-environ",
        "dsh launched by a shell holding the key; bash: the environ of every ancestor",
        ANCESTORS.format(file="environ"),
        extra=True,
        shell=True,
    ),
    Scenario(
        "flag-cmdline",
        "--api-key flag; bash: the cmdline of every ancestor in /proc",
        "env; " + ANCESTORS.format(file="cmdline"),
        key_flag=True,
        extra=True,
    ),
)
BY_NAME = {s.name: s for s in SCENARIOS}
PROMPT = re.compile(r"SCENARIO (\S+) run (\S+)")


# -- the model server ------------------------------------------------------------------------


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


class Provider:
    """The handler: routes by the ``SCENARIO name run id`` of the last user message."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: Counter[str] = Counter()

    def __call__(self, request: RecordedRequest) -> Response:
        messages = request.messages
        users = [m for m in messages if m.get("role") == "user"]
        # the last prompt naming a scenario (a runtime-context snapshot may follow it)
        found = next((m for m in (PROMPT.search(_text(u)) for u in reversed(users)) if m), None)
        if found is None:
            return stream_reply(text="no scenario in the prompt")
        name, run = found.groups()
        child = name == "child"
        scenario = BY_NAME.get(run.split(".")[0]) if child else BY_NAME.get(name)
        if scenario is None:
            return stream_reply(text=f"unknown scenario {name}")
        with self._lock:
            attempt = self._attempts[f"{name}/{run}"]
            self._attempts[f"{name}/{run}"] += 1
        after_tool = messages[-1].get("role") == "tool"
        if scenario.fault == "401-echo":
            auth = request.headers.get("authorization", "")
            return http_error(
                401,
                f"Incorrect API key provided: {auth}",
                error_type="authentication_error",
                code="invalid_api_key",
            )
        if scenario.fault == "drop" and attempt % 2 == 0:
            return stream_reply(
                text=["partial ", "reply ", "never ", "finished"], faults=Faults(drop_after=3)
            )
        if after_tool:
            return stream_reply(text=split_text("done: the command ran.", 4))
        if scenario.tool != "bash" and not child:
            arguments = json.dumps(
                {
                    "description": "check the environment",
                    "prompt": f"SCENARIO child run {scenario.name}.{run}",
                }
            )
            call = WireToolCall.split(f"call-{request.index}", scenario.tool, arguments, 3)
            return stream_reply(text="delegating", tool_calls=[call])
        if scenario.command is None:
            return stream_reply(text="nothing to run")
        arguments = json.dumps({"command": scenario.command, "description": scenario.what})
        call = WireToolCall.split(f"call-{request.index}", "bash", arguments, 3)
        return stream_reply(text="running it", tool_calls=[call])


# -- one run ---------------------------------------------------------------------------------


@dataclass
class RunResult:
    scenario: str
    run: int
    store: str
    key_vars: str
    counts: Counter[str] = field(default_factory=Counter)
    tails: Counter[str] = field(default_factory=Counter)
    leaks: list[str] = field(default_factory=list)
    tracebacks: int = 0
    exits: list[int] = field(default_factory=list)
    requests: int = 0
    sessions: int = 0
    evidence: bool = False
    errors: list[str] = field(default_factory=list)
    """The ``dsh: error:`` lines the runs printed (what a user sees of a failure)."""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Run:
    def __init__(self, scenario: Scenario, run: int, marker: str, base_url: str, root: Path) -> None:
        self.scenario = scenario
        self.marker = marker
        self.tail = marker[-8:]
        self.home = root / f"{scenario.name}-{run}"
        self.store_kind = "sqlite" if run % 2 == 0 else "jsonl"
        self.store_path = self.home / ("store.db" if self.store_kind == "sqlite" else "store")
        key_vars = ("DSH_API_KEY",), ("DEEPSEEK_API_KEY",), ("DSH_API_KEY", "DEEPSEEK_API_KEY")
        self.key_vars = () if scenario.key_flag else key_vars[run % 3]
        self.base_url = f"http://127.0.0.1:{_closed_port()}/v1" if scenario.fault == "refused" else base_url
        self.tag = f"{scenario.name}/{run}-{secrets.token_hex(3)}"
        self.canary = f"canary-{secrets.token_hex(8)}"
        self.seen_text: list[str] = []
        self.result = RunResult(scenario.name, run, self.store_kind, "+".join(self.key_vars) or "--api-key")
        self.workspace = self.home / "workspace"
        for sub in ("workspace", "data", "spill", "tmp"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
        self.env.update(
            {
                "DSH_STORE": f"{self.store_kind}:{self.store_path}",
                "XDG_DATA_HOME": str(self.home / "data"),
                "DSH_SPILL_DIR": str(self.home / "spill"),
                "TMPDIR": str(self.home / "tmp"),
                "NO_COLOR": "1",
                "COLUMNS": "200",
                "PYTHONUTF8": "1",
                "DSH_REDTEAM_CANARY": self.canary,
            }
        )
        for name in self.key_vars:
            self.env[name] = marker

    def count(self, place: str, data: bytes | str, what: str = "") -> None:
        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        n = raw.count(self.marker.encode())
        self.result.counts[place] += n
        self.result.tails[place] += raw.count(self.tail.encode())
        if n and place != LEGIT:
            at = raw.find(self.marker.encode())
            snippet = raw[max(0, at - 60) : at + len(self.marker) + 20].decode("utf-8", "replace")
            self.result.leaks.append(f"{self.tag} {place}{' ' + what if what else ''}: …{snippet!r}…")

    def dsh(self, place: str, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [PY, "-m", "dsh.cli", *args]
        if self.scenario.shell:  # "; true": the shell stays dsh's parent instead of exec'ing it
            argv = ["bash", "-c", shlex.join(argv) + "; true"]
        done = subprocess.run(
            argv, env=self.env, cwd=self.workspace, capture_output=True, text=True, timeout=180
        )
        self.count(f"stdout: {place}", done.stdout, " ".join(args[:2]))
        self.count("stderr (every command)", done.stderr, " ".join(args[:2]))
        if "Traceback" in done.stderr:
            self.result.tracebacks += 1
            self.result.leaks.append(
                f"{self.tag} traceback in {' '.join(args[:2])}: {done.stderr.strip()[-400:]}"
            )
        self.result.exits.append(done.returncode)
        self.result.errors.extend(line for line in done.stderr.splitlines() if line.startswith("dsh: error:"))
        if args[:2] == ("sessions", "export") or args[0] == "run":
            self.seen_text += [done.stdout, done.stderr]
        return done

    def turn(self, place: str, prompt: str, *extra: str) -> str | None:
        args = ["run", prompt, "--base-url", self.base_url, "--model", MODEL, *extra]
        if self.scenario.key_flag:
            args += ["--api-key", self.marker]
        done = self.dsh(place, *args)
        for line in reversed(done.stdout.splitlines()):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("sessionId"):
                return str(obj["sessionId"])
        found = re.search(r"session (\S+) ended", done.stderr)
        return found.group(1) if found else None

    def go(self) -> RunResult:
        prompt = f"SCENARIO {self.scenario.name} run {self.tag.split('/')[1]}"
        sid = self.turn("run --json events", prompt, "--json")
        listed = self.dsh("sessions list/tree", "sessions", "list", "--json")
        ids = [s["id"] for s in json.loads(listed.stdout or "[]")] if listed.returncode == 0 else []
        if sid is None and ids:
            sid = ids[0]
        if sid is not None:
            self.turn("run --resume (live view)", prompt + " again", "--resume", sid)
            listed = self.dsh("sessions list/tree", "sessions", "list", "--json")
            ids = [s["id"] for s in json.loads(listed.stdout or "[]")] if listed.returncode == 0 else ids
        self.dsh("sessions list/tree", "sessions", "tree")
        self.result.sessions = len(ids)
        for session in ids:
            self.dsh("sessions export", "sessions", "export", session)
            self.dsh("sessions show --events --json", "sessions", "show", session, "--events", "--json")
        self.scan_files()
        wanted = self.canary if self.scenario.evidence == CANARY else self.scenario.evidence
        self.result.evidence = any(wanted in text for text in self.seen_text)
        return self.result

    def scan_files(self) -> None:
        store_files = [self.store_path] if self.store_path.is_file() else []
        store_files += [p for p in self.home.glob("store.db*") if p.is_file() and p != self.store_path]
        for lease_dir in self.home.glob("store.db-*"):  # the per-session lease files
            store_files += [p for p in lease_dir.rglob("*") if p.is_file()]
        if self.store_path.is_dir():
            store_files += [p for p in self.store_path.rglob("*") if p.is_file()]
        place = "store files (SQLite bytes)" if self.store_kind == "sqlite" else "store files (JSONL)"
        for path in store_files:
            self.count(place, path.read_bytes(), path.name)
        if self.store_kind == "sqlite" and self.store_path.is_file():
            with sqlite3.connect(f"file:{self.store_path}?mode=ro", uri=True) as db:
                for (blob,) in db.execute("SELECT data FROM events WHERE typeof(data) = 'blob'"):
                    self.count("store: SQLite payloads inflated", zlib.decompress(blob))
        for path in (self.home / "spill").rglob("*"):
            if path.is_file():
                self.count("spill files", path.read_bytes(), path.name)
                self.seen_text.append(path.read_text("utf-8", "replace"))
        seen = set(store_files)
        for path in self.home.rglob("*"):
            if path.is_file() and path not in seen and (self.home / "spill") not in path.parents:
                self.count("other files of the home", path.read_bytes(), str(path.relative_to(self.home)))


def _scan_requests(run: Run, requests: Sequence[RecordedRequest]) -> None:
    key = run.tag.split("/")[1]
    mine = [r for r in requests if key in r.body.decode("utf-8", "replace")]
    run.result.requests = len(mine)
    for r in mine:
        run.count("requests: bodies", r.body)
        for name, value in r.headers.items():
            run.count(
                "requests: Authorization header" if name == "authorization" else "requests: other headers",
                value,
                name,
            )


# -- report ----------------------------------------------------------------------------------

LEGIT = "requests: Authorization header"


def table(results: Sequence[RunResult]) -> str:
    """Per scenario: runs, proof it ran, occurrences outside the Authorization header, in it."""
    by: dict[str, list[RunResult]] = {}
    for r in results:
        by.setdefault(r.scenario, []).append(r)
    rows = [
        "| scenario | what | runs | did it | key occurrences (outside Authorization) "
        "| in Authorization header | tracebacks |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, runs in by.items():
        leaked = sum(r.counts[p] for r in runs for p in PLACES if p != LEGIT)
        legit = sum(r.counts[LEGIT] for r in runs)
        did = f"{sum(r.evidence for r in runs)}/{len(runs)}"
        what = BY_NAME[name].what.replace("|", "\\|")
        rows.append(
            f"| {name} | {what} | {len(runs)} | {did} | {leaked} | {legit} "
            f"| {sum(r.tracebacks for r in runs)} |"
        )
    return "\n".join(rows)


def place_table(results: Sequence[RunResult]) -> str:
    """Per place: occurrences of the marker (and of its last 8 characters) over ``results``."""
    rows = ["| place | key occurrences | last-8 occurrences |", "|---|---|---|"]
    for place in PLACES:
        full = sum(r.counts[place] for r in results)
        tail = sum(r.tails[place] for r in results)
        label = f"{place} (legitimate)" if place == LEGIT else place
        rows.append(f"| {label} | {full} | {tail} |")
    return "\n".join(rows)


PLACES = (
    "stdout: run --json events",
    "stdout: run --resume (live view)",
    "stderr (every command)",
    "stdout: sessions export",
    "stdout: sessions show --events --json",
    "stdout: sessions list/tree",
    "store files (SQLite bytes)",
    "store: SQLite payloads inflated",
    "store files (JSONL)",
    "spill files",
    "other files of the home",
    "requests: bodies",
    "requests: other headers",
    LEGIT,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per scenario (default 3)")
    parser.add_argument("--quick", action="store_true", help="1 run per scenario")
    parser.add_argument("--only", default=None, help="comma-separated scenario names")
    parser.add_argument(
        "--extra", action="store_true", help="also the /proc/$PPID probes (see the docstring)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (default 2)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--workdir", type=Path, default=None, help="keep every run's home here")
    parser.add_argument("--show-leaks", action="store_true", help="print where each occurrence was found")
    parser.add_argument("--sandbox", default=None, help="the session's mode ($DSH_SANDBOX; default: dsh's)")
    parser.add_argument("--backend", default=None, help="auto, bubblewrap or landlock ($DSH_SANDBOX_BACKEND)")
    args = parser.parse_args(argv)
    for name, value in (("DSH_SANDBOX", args.sandbox), ("DSH_SANDBOX_BACKEND", args.backend)):
        if value is not None:
            os.environ[name] = value  # every run's environment starts from this one
    runs = 1 if args.quick else args.runs
    chosen = [s for s in SCENARIOS if args.extra or not s.extra]
    if args.only:
        names = set(args.only.split(","))
        chosen = [s for s in SCENARIOS if s.name in names]
    marker = f"sk-marker-{secrets.token_hex(16)}"
    work = args.workdir or Path(tempfile.mkdtemp(prefix="dsh-redteam-secrets-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    server = OpenAICompatServer(handler=Provider())
    server.start_in_thread()
    try:
        planned = [Run(s, n, marker, server.base_url, work) for s in chosen for n in range(runs)]
        print(f"{len(planned)} runs of {len(chosen)} scenarios, {args.jobs} at a time ...", file=sys.stderr)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(Run.go, planned))
        requests = server.requests
        for run in planned:
            _scan_requests(run, requests)
    finally:
        server.stop_thread()
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    core = [r for r in results if not BY_NAME[r.scenario].extra]
    extra = [r for r in results if BY_NAME[r.scenario].extra]
    wall = time.monotonic() - started
    mode = os.environ.get("DSH_SANDBOX", "default"), os.environ.get("DSH_SANDBOX_BACKEND", "auto")
    print(
        f"marker sk-marker-<32 hex>; {len(results)} runs, {len(requests)} model requests, "
        f"{wall:.0f} s wall; sandbox {mode[0]}, backend {mode[1]}\n"
    )
    print(
        "Per scenario (the 12; key occurrences must be 0; the Authorization header is the legitimate place):"
    )
    print()
    print(table(core))
    print("\nPer place, over the 12 scenarios:\n")
    print(place_table(core))
    if extra:
        print("\nOutside the 12 (--extra: the tool's child reading the dsh process itself):\n")
        print(table(extra))
        print()
        print(place_table(extra))
    tails = sum(r.tails[p] - r.counts[p] for r in core for p in PLACES if p != LEGIT)
    print(f"\nthe marker's last 8 characters alone (a masked key), outside the Authorization header: {tails}")
    for r in results:
        if r.requests == 0 and BY_NAME[r.scenario].fault != "refused":
            print(f"warning: {r.scenario} run {r.run} reached the server with no request")
    void = [f"{r.scenario}/{r.run}" for r in results if not r.evidence]
    if void:
        print(f"warning: no evidence that these runs did what they say (their zeros prove nothing): {void}")
    print("\nWhat a user saw of each failure (the first dsh: error: line per scenario):")
    for name in dict.fromkeys(r.scenario for r in results):
        lines = [line for r in results if r.scenario == name for line in r.errors]
        if lines:
            print(f"- {name}: {lines[0][:240]}")
    leaked = sum(r.counts[p] for r in core for p in PLACES if p != LEGIT)
    tracebacks = sum(r.tracebacks for r in results)
    if args.show_leaks:
        print("\nWhere the key was found:")
        for r in results:
            for line in r.leaks[:20]:
                print(f"- {line}")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "scenario": r.scenario,
                        "run": r.run,
                        "store": r.store,
                        "keyVars": r.key_vars,
                        "extra": BY_NAME[r.scenario].extra,
                        "counts": dict(r.counts),
                        "tails": dict(r.tails),
                        "tracebacks": r.tracebacks,
                        "exits": r.exits,
                        "requests": r.requests,
                        "evidence": r.evidence,
                        "errors": r.errors,
                        "sessions": r.sessions,
                    }
                    for r in results
                ],
                indent=2,
            )
        )
    return 1 if leaked or tracebacks or tails or void else 0


if __name__ == "__main__":
    sys.exit(main())

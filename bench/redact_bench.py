"""What redaction costs ``dsh scenario save``: a 2,000-event session saved with and without it.

The session is the W1 conversation (``bench.common``: ~200-character prompts, replies streamed
in 40 deltas, every delta kept in the settlement) in a SQLite store, 333 turns × 6 events (the first 7);
every 10th reply carries a GitHub token split across its deltas and every 10th prompt an
``sk-`` key, so the recut path runs too. Each round saves the session into a fresh directory
with ``save_scenario`` — redacted (the default) and with ``RedactOptions(enabled=False)``
(``--no-redact``) — alternating; the median CPU time of the process (all threads: a shared
machine's load moves wall times more than the difference measured) of each is reported
with their ratio, and the median of the rounds' paired differences (each redacted save minus
the ``--no-redact`` save just before it: a shared machine's speed drifts between rounds, and
the two medians can land in different modes of it) over the ``--no-redact`` median.

    .venv/bin/python -m bench.redact_bench              # 7 rounds
    .venv/bin/python -m bench.redact_bench --rounds 15 --events 2000

Two figures: the library call (``save_scenario``, CPU time) and the command a user runs
(``dsh scenario save ID DIR``, wall time of the whole process, against ``--no-redact``).

Target (issue 31): redaction adds at most 10% to the save.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import conversation
from bench.workload import append_turn, reply_chunks
from dsh.events import SessionHeader
from dsh.session import Session
from dsh.snapshot.redaction import RedactOptions
from dsh.snapshot.save import save_scenario
from dsh.store.sqlite import SqliteEventStore

SESSION = "11111111-2222-4333-8444-555555555555"
TOKEN = "ghp_" + "R4nd0mT0k3nF0rB3nchm4rk1ng0123456789"
KEY = "sk-" + "bench0123456789abcdefghijklmnop"
EVENTS_PER_TURN = 6


async def _build(root: Path, events: int) -> SqliteEventStore:
    turns = max(1, events // EVENTS_PER_TURN)  # 6 events a turn, the first 7: 1,999 for 2,000
    conv = conversation(turns)
    store = SqliteEventStore(root / "sessions.db")
    header = SessionHeader(id=SESSION, created_at=1_700_000_000_000, cwd="/work")
    await store.create(header)
    session = Session(header)
    for i in range(turns):
        deltas = list(conv.deltas[i])
        if i % 10 == 0:
            deltas[3:5] = [f" {TOKEN[:9]}", f"{TOKEN[9:]} "]
            conv.users[i] = f"{conv.users[i][:-40]} key {KEY}"
        append_turn(session, conv, i, reply_chunks(deltas))
    await store.append(SESSION, session.events, durable=True)
    return store


async def _save(store: SqliteEventStore, target: Path, redact: RedactOptions) -> float:
    shutil.rmtree(target, ignore_errors=True)
    t0 = time.process_time()
    await save_scenario(store, SESSION, target, redact=redact)
    return time.process_time() - t0


def _cli(db: Path, target: Path, *flags: str) -> float:
    shutil.rmtree(target, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "dsh.cli", "scenario", "save", SESSION, str(target), "--store", f"sqlite:{db}",
         *flags], check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - t0


async def main(rounds: int, events: int) -> None:
    with tempfile.TemporaryDirectory(prefix="dsh-redact-bench-") as tmp:
        root = Path(tmp)
        store = await _build(root, events)
        count = len((await store.load(SESSION)).events)
        cli_plain, cli_redacted = [], []
        for _ in range(rounds):  # alternating, as the library rounds below
            cli_plain.append(_cli(root / "sessions.db", root / "c1", "--no-redact"))
            cli_redacted.append(_cli(root / "sessions.db", root / "c2"))
        on, off = RedactOptions(), RedactOptions(enabled=False)
        await _save(store, root / "warm", on)
        redacted, plain = [], []
        for _ in range(rounds):
            plain.append(await _save(store, root / "plain", off))
            redacted.append(await _save(store, root / "redacted", on))
        text = (root / "redacted" / "session.jsonl").read_text()
        assert TOKEN not in text and KEY not in text, "the bench's secrets must be redacted"
        await store.close()
    a, b = statistics.median(plain), statistics.median(redacted)
    verdict = "met" if b <= a * 1.10 else "MISSED"
    print(f"| save of {count} events | median of {rounds} | CPU ms |")
    print("|---|---|---|")
    print(f"| --no-redact | {rounds} rounds | {a * 1000:.1f} |")
    print(f"| redacted (default) | {rounds} rounds | {b * 1000:.1f} |")
    print(f"| cost of redaction | | {100 * (b / a - 1):+.1f}% ({verdict}: target ≤ +10%) |")
    paired = statistics.median(r - p for r, p in zip(redacted, plain, strict=True))
    verdict = "met" if paired <= a * 0.10 else "MISSED"
    print(f"| cost, paired (median of each round's redacted − --no-redact) | {rounds} pairs | "
          f"{paired * 1000:+.1f} = {100 * paired / a:+.1f}% ({verdict}: target ≤ +10%) |")  # fmt: skip
    c, d = statistics.median(cli_plain), statistics.median(cli_redacted)
    verdict = "met" if d <= c * 1.10 else "MISSED"
    print(f"| `dsh scenario save --no-redact` (process wall) | {rounds} rounds | {c * 1000:.1f} |")
    print(f"| `dsh scenario save` (process wall) | {rounds} rounds | {d * 1000:.1f} |")
    print(f"| cost of redaction, the command | | {100 * (d / c - 1):+.1f}% ({verdict}: target ≤ +10%) |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.events))

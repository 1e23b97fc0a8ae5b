"""What the decode-time shape check costs: ``decode_log`` with and without it, interleaved.

Two inputs: a T = 2000 session as the loop writes it (6 events a turn, each reply streamed
as 40 deltas in its settlement; about 6.4 MB) and every version-0 log under
``../shared/fixtures/dsh-upstream``. Each round decodes both with the check and with it
replaced by a no-op; the figure is the minimum CPU time (``process_time``) per variant, so a
busy neighbour on a shared machine disturbs it less than wall time.

    .venv/bin/python bench/decode_shape_cost.py --rounds 20
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh.events import SessionHeader
from dsh.store import codec, legacy
from dsh.store.base import LoadedSession
from dsh.store.logfile import decode_log, encode_log
from dsh.store.samples import completed_turn

UPSTREAM = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "dsh-upstream"


def w1_log(turns: int = 2000) -> bytes:
    events = []
    for turn in range(1, turns + 1):
        events += completed_turn(len(events), turn, reply="x" * 120)
    return encode_log(LoadedSession(SessionHeader(id="s", created_at=1), 0, events))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    w1 = w1_log()
    v0 = [p.read_bytes() for p in sorted(UPSTREAM.glob("*/session*.jsonl"))]
    real: tuple[Callable[..., Any], ...] = (
        codec.check_data_shape,
        codec.check_event_shape,
        legacy.check_event_shape,
    )
    off: tuple[Callable[..., Any], ...] = (lambda *a: None,) * 3
    best: dict[tuple[str, str], float] = {}
    for _ in range(args.rounds):
        for name, fns in (("with the check", real), ("without", off)):
            codec.check_data_shape, codec.check_event_shape, legacy.check_event_shape = fns
            start = time.process_time()
            decode_log(w1, "w1")
            w1_s = time.process_time() - start
            start = time.process_time()
            for data in v0:
                decode_log(data, "v0")
            v0_s = time.process_time() - start
            best[(name, "w1")] = min(best.get((name, "w1"), w1_s), w1_s)
            best[(name, "v0")] = min(best.get((name, "v0"), v0_s), v0_s)
    codec.check_data_shape, codec.check_event_shape, legacy.check_event_shape = real
    print(f"| decode_log (min CPU of {args.rounds}) | with the check | without | cost |")
    print("|---|---|---|---|")
    for key, label in (("w1", f"T=2000 session, {len(w1) / 1e6:.1f} MB"), ("v0", f"{len(v0)} v0 logs")):
        a, b = best[("with the check", key)], best[("without", key)]
        print(f"| {label} | {a * 1000:.1f} ms | {b * 1000:.1f} ms | +{(a / b - 1) * 100:.0f}% |")


if __name__ == "__main__":
    main()

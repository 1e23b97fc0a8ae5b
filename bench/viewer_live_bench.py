"""dsh ui: what one live event costs the viewer at event 10 and at event 5,000 of a session.

The live page (``/s/{id}/live``) turns each appended event into transcript entries, the
event-table row and the session's status. Since the read model (``dsh.session.timeline``)
that is one fold step of the page's ``TranscriptBuilder`` plus rendering; before it, the page
re-derived the whole session per event (``digest.derive`` over every event seen), which is
timed alongside as the quadratic baseline. Each figure is the median per-event cost over a
window of events starting at that position, over several fresh runs.

    .venv/bin/python bench/viewer_live_bench.py [--at 10,5000] [--window 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from dsh.events import Event, SessionHeader
from dsh.session.digest import derive
from dsh.store.samples import completed_turn
from dsh.ui.templates import environment
from dsh.ui.transcript import TranscriptBuilder, pretty_json

HEADER = SessionHeader(id="s", created_at=1, cwd="/w")


def session(count: int) -> list[Event]:
    events: list[Event] = []
    turn = 1
    while len(events) < count:
        events += completed_turn(len(events), turn, reply=f"the reply of turn {turn} " * 4)
        turn += 1
    return events


def per_event(events: list[Event], at: int, window: int, *, rederive: bool) -> float:
    """Seconds per live event for the events ``at .. at + window`` (the page warmed to ``at``)."""
    env = environment()
    env.globals["pretty_json"] = pretty_json  # as the app does
    macro = env.get_template("items.html").module
    render_items: Callable[[object], str] = macro.items  # type: ignore[attr-defined]
    render_row: Callable[[Event, int], str] = macro.event_row  # type: ignore[attr-defined]
    builder = TranscriptBuilder("s", 0, {})
    for event in events[:at]:
        builder.feed(event)
    start = time.perf_counter()
    for k in range(at, at + window):
        event = events[k]
        entries = builder.feed(event)
        render_items(entries)
        render_row(event, 0)
        if rederive:
            derive(HEADER, events[: k + 1], 0).status  # noqa: B018 - the old page's per-event cost
        else:
            builder.status()
    return (time.perf_counter() - start) / window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", default="10,5000")
    parser.add_argument("--window", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    positions = [int(p) for p in args.at.split(",")]
    events = session(max(positions) + args.window + 1)
    print(f"session of {len(events)} events; median of {args.runs} runs, {args.window} events each")
    for label, rederive in (("timeline fold (now)", False), ("re-derive per event (before)", True)):
        samples: dict[int, list[float]] = {at: [] for at in positions}
        for _ in range(args.runs):  # interleaved: a noisy machine drifts alike for every position
            for at in positions:
                samples[at].append(per_event(events, at, args.window, rederive=rederive))
        figures = [statistics.median(samples[at]) for at in positions]
        shown = "  ".join(f"event {at}: {f * 1e6:8.1f} µs" for at, f in zip(positions, figures, strict=True))
        print(f"{label:30} {shown}  ratio {figures[-1] / figures[0]:.2f}×")


if __name__ == "__main__":
    main()

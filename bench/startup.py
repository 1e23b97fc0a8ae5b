"""Start-up: the CPU time of ``dsh --version`` and ``dsh run --help``, side by side with ``python -c pass``.

Each command runs in a fresh process (the installed console script next to the interpreter,
``.venv/bin/dsh``), interleaved with the floor so a noisy neighbour hits both; a process's CPU
time (user + system, its children's rusage) is measured, and the median of the rounds reported.

    .venv/bin/python -m bench.startup              # 15 rounds
    .venv/bin/python -m bench.startup --rounds 31

Target (issue 40): ``dsh --version`` ≤ 0.08 s CPU.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

TARGET_VERSION_S = 0.08

DSH = str(Path(sys.executable).with_name("dsh"))

COMMANDS: dict[str, list[str]] = {
    "python -c pass (floor)": [sys.executable, "-c", "pass"],
    "dsh --version": [DSH, "--version"],
    "dsh run --help": [DSH, "run", "--help"],
    "dsh --help": [DSH, "--help"],
}


def cpu_of(argv: list[str]) -> float:
    """The CPU seconds (user + system) one process running ``argv`` took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(rounds: int) -> int:
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for r in range(rounds):
        names = list(COMMANDS)
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:  # the order rotates each round
            samples[name].append(cpu_of(COMMANDS[name]))
    floor = statistics.median(samples["python -c pass (floor)"])
    print(f"| start-up, CPU (median of {rounds}) | s | × floor |")
    print("|---|---|---|")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"| `{name}` | {median:.3f} ({min(values):.3f}–{max(values):.3f}) | {median / floor:.1f} |")
    version = statistics.median(samples["dsh --version"])
    met = version <= TARGET_VERSION_S
    verdict = "met" if met else "MISSED"
    print(f"\n`dsh --version` {version:.3f} s CPU: {verdict} (target ≤ {TARGET_VERSION_S} s)")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15)
    sys.exit(main(parser.parse_args().rounds))

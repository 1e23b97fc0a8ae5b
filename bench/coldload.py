"""Cold load in a fresh process: ``python -m bench.coldload MODULE:FUNCTION ROOT``.

The module is imported first, with its ``preload()`` if it has one (imports are not part
of a load); then the timer covers opening
the store and reading every record back. Prints one JSON line: ``{"seconds", "records"}``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path


def main() -> None:
    target, root = sys.argv[1], Path(sys.argv[2])
    module_name, func_name = target.split(":")
    module = importlib.import_module(module_name)
    func = getattr(module, func_name)
    preload = getattr(module, "preload", None)
    if preload is not None:
        preload()
    start = time.perf_counter()
    records = func(root)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "records": records}))


if __name__ == "__main__":
    main()

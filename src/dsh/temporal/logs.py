"""A worker's log: one plain line per event on stderr, ``dsh worker: ...``, never colour codes.

The Temporal core writes its warnings itself (colour-coded on a terminal, on stdout) unless
its runtime forwards them to Python. :func:`plain_worker_log` makes the default runtime do
that and sends every warning — the core's, the Temporal SDK's, the store's, Python's
``warnings`` — through one handler: ``dsh worker: <level>: <message>``, a message's line
breaks folded, escape sequences dropped, an exception named (``(Type: text)``) instead of
its traceback. The worker's own lines (:func:`worker_line`) have the same prefix.
"""

from __future__ import annotations

import logging
import re
from typing import Final, TextIO

from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

PREFIX: Final = "dsh worker: "
_CORE: Final = "temporalio.core"
"""The logger the core's forwarded lines go to."""
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b")


def worker_line(text: str) -> str:
    """One of the worker's own lines (``polling …``, ``stopped``)."""
    return PREFIX + _one_line(text)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in _ESCAPES.sub("", text).splitlines() if part.strip())


class OneLine(logging.Formatter):
    """A record as one plain line: ``dsh worker: <level>: <message> (<exception>)``."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info is not None and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        return worker_line(f"{record.levelname.lower()}: {text}")


def end_core_log() -> None:
    """Write none of the Temporal core's lines from now on: the worker has stopped polling, but
    the core forwards its log in batches, and a retried poll's warning could come after the
    worker's ``stopped`` line (call this just before writing it: ``stopped`` is the last line)."""
    logging.getLogger(_CORE).disabled = True


def plain_worker_log(stream: TextIO) -> None:
    """Every warning of this process to ``stream`` as one plain line, the Temporal core's
    too (before any client connects: the default runtime is set here)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(OneLine())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)
    core = logging.getLogger(_CORE)
    forwarding = LogForwardingConfig(logger=core, append_target_to_name=False)
    filtered = TelemetryFilter(core_level="WARN", other_level="ERROR")
    telemetry = TelemetryConfig(logging=LoggingConfig(filter=filtered, forwarding=forwarding))
    Runtime.set_default(Runtime(telemetry=telemetry), error_if_already_set=False)

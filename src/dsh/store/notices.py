"""Store warnings — a torn tail left out, a foreign file skipped, an import rolled back — and where they go.

A store reports a warning with :func:`report`; the code that runs the store decides where it
goes by installing a sink for the current context with :func:`warnings_to` (the CLI prints
each distinct message once on stderr). Without a sink, warnings go to the ``dsh.store``
logger. The sink is a context variable, so it follows ``asyncio`` tasks; report from the
event loop, not from a worker thread (``run_in_executor`` does not copy the context).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

WarningSink = Callable[[str], None]

_sink: ContextVar[WarningSink | None] = ContextVar("dsh_store_warning_sink", default=None)
_log = logging.getLogger("dsh.store")


def report(message: str) -> None:
    """Hand one warning line to the current sink (or the ``dsh.store`` logger)."""
    sink = _sink.get()
    if sink is None:
        _log.warning("%s", message)
    else:
        sink(message)


def report_all(messages: Iterable[str]) -> None:
    """:func:`report` each message."""
    for message in messages:
        report(message)


@contextmanager
def warnings_to(sink: WarningSink) -> Iterator[None]:
    """Send the store warnings reported in this context (and tasks started in it) to ``sink``."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)

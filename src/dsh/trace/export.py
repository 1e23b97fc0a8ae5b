"""Where a trace goes: an OTLP/JSON document, or OTLP/HTTP to a collector.

``--endpoint URL`` posts to ``URL/v1/traces`` (a URL already ending in ``/v1/traces`` is
taken as it is); with no endpoint given, the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
/ ``OTEL_EXPORTER_OTLP_ENDPOINT`` variables name it, and ``OTEL_EXPORTER_OTLP_HEADERS`` /
``OTEL_EXPORTER_OTLP_TIMEOUT`` apply as the SDK reads them. A collector that cannot be
reached or refuses the batch is one :class:`~dsh.errors.ExportError` line.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from dsh.errors import ExportError, UsageError
from dsh.trace.otlp_json import otlp_document
from dsh.trace.plan import PlannedSpan
from dsh.trace.sdk import readable_spans, require_sdk

TRACES_PATH = "/v1/traces"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def traces_url(endpoint: str) -> str:
    """``URL/v1/traces`` for a collector's base URL (kept when it already names the path)."""
    if not endpoint.startswith(("http://", "https://")):
        raise UsageError(f"--endpoint {endpoint!r}: expected an http:// or https:// URL")
    base = endpoint.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def environment_endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """The traces URL the standard OTLP variables name, if any."""
    environ = os.environ if environ is None else environ
    specific = environ.get(ENDPOINT_VARIABLES[0], "").strip()
    if specific:
        return specific
    general = environ.get(ENDPOINT_VARIABLES[1], "").strip()
    return traces_url(general) if general else None


def parse_headers(pairs: Sequence[str]) -> dict[str, str]:
    """``--header NAME=VALUE`` (repeatable) as a dict; a pair without ``=`` is a usage error."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--header {pair!r}: expected NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def document(plan: Sequence[PlannedSpan]) -> dict[str, Any]:
    """The OTLP/JSON ``ExportTraceServiceRequest`` of a plan."""
    return otlp_document(readable_spans(plan))


@contextmanager
def _quiet_exporter() -> Iterator[None]:
    """The SDK logs each failed export with a traceback; dsh says it once, itself."""
    names = (
        "opentelemetry.exporter.otlp.proto.http",
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    )
    loggers = [logging.getLogger(n) for n in names]
    before = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, before, strict=True):
            lg.disabled = was


def send(plan: Sequence[PlannedSpan], url: str, headers: Mapping[str, str], *, timeout: float = 10.0) -> int:
    """POST the plan's spans to ``url`` (OTLP/HTTP protobuf); the span count, or ExportError."""
    require_sdk()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    spans = readable_spans(plan)
    if not spans:
        return 0
    exporter = OTLPSpanExporter(endpoint=url, headers=dict(headers) or None, timeout=timeout)
    try:
        with _quiet_exporter():
            result = exporter.export(spans)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
    if result is not SpanExportResult.SUCCESS:
        raise ExportError(f"the OTLP endpoint {url} did not accept the trace (unreachable or refused)")
    return len(spans)

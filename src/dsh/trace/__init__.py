"""Traces and comparisons read from the log: OpenTelemetry GenAI spans, ``dsh diff``.

Names load on first use (:mod:`dsh.lazy`); the OpenTelemetry SDK (the ``[otel]`` extra) is
imported only when spans are made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.lazy import exports

_HOMES = {
    "PlanOptions": "dsh.trace.plan",
    "PlannedSpan": "dsh.trace.plan",
    "plan_spans": "dsh.trace.plan",
    "readable_spans": "dsh.trace.sdk",
    "emit": "dsh.trace.sdk",
    "otlp_document": "dsh.trace.otlp_json",
    "send": "dsh.trace.export",
    "traces_url": "dsh.trace.export",
}

__all__ = [
    "PlanOptions",
    "PlannedSpan",
    "emit",
    "otlp_document",
    "plan_spans",
    "readable_spans",
    "send",
    "traces_url",
]

__getattr__, __dir__ = exports(__name__, _HOMES)

if TYPE_CHECKING:
    from dsh.trace.export import send, traces_url
    from dsh.trace.otlp_json import otlp_document
    from dsh.trace.plan import PlannedSpan, PlanOptions, plan_spans
    from dsh.trace.sdk import emit, readable_spans

"""The planned spans through the official OpenTelemetry SDK: the one place dsh touches it.

:func:`emit` replays a span plan into any ``SpanExporter`` (the SDK's in-memory exporter,
the OTLP/HTTP exporter, the JSON file writer of :mod:`dsh.trace.otlp_json`) with the plan's
own ids and logged times. The SDK is the ``[otel]`` extra, imported when a trace is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dsh.errors import UsageError, install_hint
from dsh.trace.plan import PlannedSpan

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

SCOPE = "dsh"


def _ns(ms: int) -> int:
    return ms * 1_000_000


def require_sdk() -> None:
    """Raise the install hint when the ``[otel]`` extra is missing."""
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"OpenTelemetry export needs the otel extra: {install_hint('otel')} ({exc.name} is not installed)"
        ) from exc


def readable_spans(plan: Sequence[PlannedSpan], service: str = "dsh") -> list[ReadableSpan]:
    """The plan as the SDK's finished spans (``ReadableSpan``), in plan order."""
    require_sdk()
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    class PlannedIds(IdGenerator):
        """Hands out the plan's ids: set :attr:`span` / :attr:`trace` before starting a span."""

        span = 1
        trace = 1

        def generate_span_id(self) -> int:
            return self.span

        def generate_trace_id(self) -> int:
            return self.trace

    ids = PlannedIds()
    sink = InMemorySpanExporter()
    found = Resource.create({"service.name": service}).attributes
    resource = Resource({k: v for k, v in found.items() if k != "service.instance.id"})  # random per run
    provider = TracerProvider(resource=resource, id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(sink))
    tracer = provider.get_tracer(SCOPE)
    kinds = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
    for span in plan:
        ids.span, ids.trace = int(span.span_id, 16), int(span.trace_id, 16)
        context = trace.set_span_in_context(
            NonRecordingSpan(
                SpanContext(
                    int(span.trace_id, 16),
                    int(span.parent_id, 16) if span.parent_id else int(span.span_id, 16),
                    is_remote=False,
                    trace_flags=TraceFlags(TraceFlags.SAMPLED),
                )
            )
        )
        attributes = {**span.attributes, **({"dsh.span.open": True} if span.open else {})}
        live = tracer.start_span(
            span.name,
            context=context if span.parent_id else None,
            kind=kinds[span.kind],
            attributes=attributes,
            start_time=_ns(span.start_ms),
        )
        for event in span.events:
            live.add_event(event.name, dict(event.attributes), timestamp=_ns(event.time_ms))
        if span.error is not None:
            live.set_status(Status(StatusCode.ERROR, span.error))
        live.end(end_time=_ns(span.end_ms))
    provider.shutdown()
    return list(sink.get_finished_spans())


def emit(plan: Sequence[PlannedSpan], exporter: SpanExporter, service: str = "dsh") -> bool:
    """Export the plan's spans in one batch; ``True`` when the exporter took them."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    spans = readable_spans(plan, service)
    return not spans or exporter.export(spans) is SpanExportResult.SUCCESS

"""OTLP JSON: finished spans as an ``ExportTraceServiceRequest`` in the OTLP/JSON mapping.

The body is the SDK's own protobuf encoding of the spans turned into the protobuf JSON
mapping, with the two changes OTLP/JSON makes to it: trace and span ids are hex strings
(not base64), and enums are integers. ``resourceSpans[].scopeSpans[].spans[]``.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_document(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON ``ExportTraceServiceRequest`` of ``spans``."""
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped, unused-ignore]  # typed when types-protobuf is in (temporal extra)
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    body = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    document: dict[str, Any] = _hex_ids(body)
    document.setdefault("resourceSpans", [])
    return document

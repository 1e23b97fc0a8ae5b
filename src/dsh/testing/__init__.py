"""Test doubles users need too: the local OpenAI-compatible SSE server and its response scripts."""

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import (
    CRLF_STYLE,
    DEEPSEEK_STYLE,
    OPENAI_STYLE,
    Faults,
    Response,
    WireStyle,
    WireToolCall,
    held,
    http_error,
    json_response,
    raw_stream,
    stream_reply,
    wire_usage,
)

__all__ = [
    "CRLF_STYLE",
    "DEEPSEEK_STYLE",
    "OPENAI_STYLE",
    "Faults",
    "OpenAICompatServer",
    "RecordedRequest",
    "Response",
    "WireStyle",
    "WireToolCall",
    "held",
    "http_error",
    "json_response",
    "raw_stream",
    "stream_reply",
    "wire_usage",
]

"""How much a workflow history carries: the bytes of every payload in its events."""

from __future__ import annotations

from google.protobuf.message import Message as ProtoMessage
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHistory


def message_payload_bytes(message: ProtoMessage) -> int:
    """The bytes of the payloads (data and metadata) anywhere inside one protobuf message."""
    if isinstance(message, Payload):
        return len(message.data) + sum(len(k) + len(v) for k, v in message.metadata.items())
    total = 0
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if isinstance(value, ProtoMessage):
            total += message_payload_bytes(value)
            continue
        items = value.values() if field.message_type.GetOptions().map_entry else value
        total += sum(message_payload_bytes(v) for v in items if isinstance(v, ProtoMessage))
    return total


def payload_bytes(history: WorkflowHistory) -> int:
    """The bytes of the payloads (data and metadata) of every event of ``history``: what the
    workflow carried in inputs, results, signals and failures."""
    return sum(message_payload_bytes(event) for event in history.events)

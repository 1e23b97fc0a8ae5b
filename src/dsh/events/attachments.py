"""Attachments: image bytes a session's messages refer to, stored once by their sha256.

A message carries only a reference, the original's ``attachment`` object: ``{attachmentId:
"sha256:<64 hex>", mediaType, bytes, width, height}`` (a tool result's image adds ``name``).
The bytes live in the session's store (``EventStore.put_attachment`` / ``get_attachment``);
identical bytes are one object however many messages show them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import NotRequired, Protocol, TypedDict

ATTACHMENT_ID = re.compile(r"^sha256:[0-9a-f]{64}$")


class AttachmentRef(TypedDict):
    """An image block's ``attachment``, in the original's key order."""

    attachmentId: str
    mediaType: str
    bytes: int
    width: int
    height: int
    name: NotRequired[str]


def attachment_id(data: bytes) -> str:
    """``sha256:`` + the lowercase hex digest of the raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Attachment:
    """Stored bytes and their media type; ``id`` is always :func:`attachment_id` of ``data``."""

    media_type: str
    data: bytes

    @property
    def id(self) -> str:
        return attachment_id(self.data)


class AttachmentStore(Protocol):
    """Where attachments are kept (every ``EventStore`` is one)."""

    async def put_attachment(self, attachment: Attachment) -> str:
        """Store the bytes once (already stored: nothing happens); returns the id."""
        ...

    async def get_attachment(self, attachment_id: str) -> Attachment | None:
        """The stored attachment (its digest verified), ``None`` when it is not stored."""
        ...

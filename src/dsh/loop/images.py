"""The image bytes a model request carries: the history's attachments, loaded once per agent."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.errors import StoreError
from dsh.events.attachments import Attachment, AttachmentStore
from dsh.events.messages import Message
from dsh.model.openai_wire import image_ids


class RequestImages:
    """Loads the attachments the history's image blocks name from the session's store.

    Only for a model that takes images (else the request carries none and the wire sends a
    note instead). An attachment the store no longer has, or whose bytes fail their digest,
    is left out the same way: a request is never refused for it.
    """

    def __init__(self, store: AttachmentStore, enabled: bool) -> None:
        self._store = store
        self._enabled = enabled
        self._loaded: dict[str, Attachment] = {}
        self._missing: set[str] = set()

    async def for_messages(self, messages: Sequence[Message]) -> dict[str, Attachment]:
        if not self._enabled:
            return {}
        wanted: list[str] = []
        for message in messages:
            content = message.get("content")
            if isinstance(content, list):
                wanted.extend(image_ids([b for b in content if isinstance(b, dict)]))
        out: dict[str, Attachment] = {}
        for attachment_id in dict.fromkeys(wanted):
            if attachment_id not in self._loaded and attachment_id not in self._missing:
                try:
                    found = await self._store.get_attachment(attachment_id)
                except StoreError:
                    found = None
                if found is None:
                    self._missing.add(attachment_id)
                else:
                    self._loaded[attachment_id] = found
            if attachment_id in self._loaded:
                out[attachment_id] = self._loaded[attachment_id]
        return out

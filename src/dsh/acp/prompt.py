"""An ACP prompt's content blocks → what the agent's turn starts with.

Text and resource links only: one user message (each text block kept, a link as a
bracketed reference). With image blocks, the original's admission: every block checked
first — the image capability advertised (``inline image prompts were not advertised by
this connection``), a listed ``mimeType``, canonical base64, the image itself
(``dsh.tools.images``) — then the prompt is text and image parts for
``Agent.prompt_message`` (which stores the images and joins adjacent texts, a link
rendered ``\\n[resource_link name=<JSON> uri=<JSON>]\\n``). Every refusal is
``-32602 Invalid params: <detail>`` and nothing is queued or stored.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from acp.exceptions import RequestError
from acp.schema import ImageContentBlock, ResourceContentBlock, TextContentBlock

from dsh.events.messages import Message, text_block, user_message
from dsh.loop.prompt import is_blank
from dsh.loop.prompts import PromptPart, resource_link_text
from dsh.tools.images import MEDIA_TYPES, ImageRefused, admit


def invalid_params(detail: str) -> RequestError:
    return RequestError(-32602, f"Invalid params: {detail}")


def _image(block: ImageContentBlock, advertised: bool) -> PromptPart:
    if not advertised:
        raise invalid_params("inline image prompts were not advertised by this connection")
    if block.mime_type not in MEDIA_TYPES.values():
        raise invalid_params("image mimeType must be image/png, image/jpeg, image/webp, or image/gif")
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise invalid_params("image data must be canonical base64") from exc
    if base64.b64encode(data).decode("ascii") != block.data:
        raise invalid_params("image data must be canonical base64")
    try:
        return admit(data, block.mime_type)
    except ImageRefused as exc:
        raise invalid_params(str(exc)) from exc


def admit_prompt(blocks: Sequence[Any], *, images: bool = False) -> Message | list[PromptPart]:
    """The prompt as a user message, or (with image blocks) as parts; ``images``: whether
    this connection advertised ``promptCapabilities.image``."""
    if any(isinstance(b, ImageContentBlock) for b in blocks):
        parts: list[PromptPart] = []
        for block in blocks:
            if isinstance(block, TextContentBlock):
                parts.append(block.text)
            elif isinstance(block, ResourceContentBlock):
                parts.append(resource_link_text(block.name, block.uri))
            elif isinstance(block, ImageContentBlock):
                parts.append(_image(block, images))
            else:
                kind = getattr(block, "type", type(block).__name__)
                raise invalid_params(f"{kind} prompt content is not supported (see promptCapabilities)")
        return parts
    content = []
    said = False  # some text or a link the model can act on (dsh.loop.prompt: blank is refused)
    for block in blocks:
        if isinstance(block, TextContentBlock):
            if block.text:
                content.append(text_block(block.text))
                said = said or not is_blank(block.text)
        elif isinstance(block, ResourceContentBlock):
            content.append(text_block(f"[resource_link name={block.name} uri={block.uri}]"))
            said = True
        else:
            kind = getattr(block, "type", type(block).__name__)
            raise invalid_params(f"{kind} prompt content is not supported (see promptCapabilities)")
    if not said:
        raise invalid_params("the prompt is empty (only whitespace)" if content else "the prompt is empty")
    message = user_message("")
    message["content"] = content
    return message

"""A user prompt with images: admitted whole, then stored, then one user message.

``Agent.run_turn([text, Image.from_path(p), text])``, ``dsh run --image FILE`` and an ACP
prompt's image blocks all come here. As the original: every image is checked first (count
≤ 20, total ≤ 100 MiB, a model that takes images), nothing is stored unless all pass; then
each is stored by sha256 and the content is built in order — consecutive texts joined into
one text block, each image an ``image`` block whose ``attachment`` is ``{attachmentId,
mediaType, width, height, bytes}`` (no ``name``), empty texts left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.errors import UsageError
from dsh.events.attachments import AttachmentStore
from dsh.events.messages import Block, Message, text_block, user_message
from dsh.jsonx import dumps_compact_text
from dsh.tools.images import MAX_IMAGES_PER_MESSAGE, MAX_MESSAGE_IMAGE_BYTES, Image

PromptPart = str | Image
"""One piece of a prompt: text, or an admitted image."""


def resource_link_text(name: object, uri: object) -> str:
    """How a prompt's resource link reads next to its text and images (the original's)."""
    return f"\n[resource_link name={dumps_compact_text(name)} uri={dumps_compact_text(uri)}]\n"


class ImagePromptError(UsageError):
    """An image prompt refused before anything was stored (the original's wording)."""


def check_images(images: Sequence[Image], *, model: str, takes_images: bool) -> None:
    """The batch checks, before any image is stored."""
    if not images:
        return
    if not model:
        raise ImagePromptError("the current model route could not be resolved for image input")
    if not takes_images:
        raise ImagePromptError(f'model "{model}" does not declare image input')
    if len(images) > MAX_IMAGES_PER_MESSAGE:
        raise ImagePromptError("Image batch exceeds the configured image-count limit.")
    if sum(len(i.data) for i in images) > MAX_MESSAGE_IMAGE_BYTES:
        raise ImagePromptError("Image batch exceeds the configured aggregate image-byte limit.")


async def prompt_message(
    parts: Sequence[PromptPart], store: AttachmentStore, *, model: str, takes_images: bool
) -> Message:
    """The user message for ``parts`` (its images stored); ``ImagePromptError`` when refused."""
    images = [p for p in parts if isinstance(p, Image)]
    check_images(images, model=model, takes_images=takes_images)
    if not images and not any(p.strip() for p in parts if isinstance(p, str)):
        raise ImagePromptError("empty prompt")
    for image in images:
        await store.put_attachment(image.attachment)
    content: list[Block] = []
    pending = ""
    for part in parts:
        if isinstance(part, str):
            pending += part
            continue
        if pending:
            content.append(text_block(pending))
            pending = ""
        content.append({"type": "image", "attachment": part.prompt_ref()})
    if pending:
        content.append(text_block(pending))
    message = user_message("")
    message["content"] = content
    return message

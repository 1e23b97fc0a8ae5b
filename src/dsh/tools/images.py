"""Images the model may see: admission (the original's limits and texts) and the ``Image`` value.

One rule for every way an image enters a session — ``read_image``, an ACP prompt's image
block, ``dsh run --image``, ``agent.run_turn([text, Image.from_path(p)])``: the bytes are
decoded in full (Pillow), the detected format must be the declared one, and the limits are
the original's attachment defaults. A refusal is an :class:`ImageRefused` whose ``kind``
says which limit, so each caller words it as the original does.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from dsh.errors import UsageError
from dsh.events.attachments import Attachment, AttachmentRef

MAX_IMAGE_BYTES: Final = 3_670_016
"""3.5 MiB per image (``maxImageBytes``; ``read_image`` caps a file at this size)."""
MAX_IMAGES_PER_MESSAGE: Final = 20
MAX_MESSAGE_IMAGE_BYTES: Final = 104_857_600
MAX_IMAGE_PIXELS: Final = 40_000_000
MAX_IMAGE_SIDE: Final = 2000

MEDIA_TYPES: Final = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
"""The accepted formats (Pillow's name → media type)."""
EXTENSIONS: Final = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                     ".webp": "image/webp", ".gif": "image/gif"}  # fmt: skip

RefusalKind = Literal["empty", "bytes", "pixels", "side", "mismatch", "malformed", "type"]

REFUSAL_TEXTS: Final[dict[RefusalKind, str]] = {
    "empty": "Image is empty.",
    "bytes": "Image exceeds the configured byte limit.",
    "pixels": "Image exceeds the configured decoded-pixel limit.",
    "side": "Image exceeds the configured per-side pixel limit.",
    "mismatch": "Declared image type does not match its bytes.",
    "malformed": "Unsupported or malformed image data.",
    "type": "Image type is not accepted by this deployment.",
}
"""The original's attachment-store texts for each refusal."""


class ImageRefused(UsageError):
    """An image the attachment rules refuse; ``kind`` names the rule, ``str()`` the original's text."""

    def __init__(self, kind: RefusalKind, text: str | None = None) -> None:
        super().__init__(text or REFUSAL_TEXTS[kind])
        self.kind: RefusalKind = kind


@dataclass(frozen=True, slots=True)
class Image:
    """Image bytes with their media type and size, admitted by :func:`admit`.

    ``Image.from_path(p)`` / ``Image.from_bytes(data, media_type)`` raise
    :class:`ImageRefused` for an image the original's limits refuse.
    """

    data: bytes
    media_type: str
    width: int
    height: int
    name: str | None = None

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, *, name: str | None = None) -> Image:
        return admit(data, media_type, name=name)

    @classmethod
    def from_path(cls, path: str | Path) -> Image:
        """An image file (PNG, JPEG, WebP or GIF by its extension); the file is read once."""
        path = Path(path)
        media_type = EXTENSIONS.get(path.suffix.lower())
        if media_type is None:
            raise UsageError(f"{path}: not a PNG/JPEG/WebP/GIF file name")
        try:
            size = path.stat().st_size
            if size > MAX_IMAGE_BYTES:
                raise ImageRefused("bytes", f"{path}: {size} bytes exceeds the {MAX_IMAGE_BYTES}-byte limit")
            data = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
        return admit(data, media_type, name=path.name)

    @property
    def attachment(self) -> Attachment:
        return Attachment(self.media_type, self.data)

    def ref(self, *, with_name: bool = False) -> AttachmentRef:
        """The block's ``attachment`` object (``name`` only for a tool result's image)."""
        ref: AttachmentRef = {
            "attachmentId": self.attachment.id,
            "mediaType": self.media_type,
            "bytes": len(self.data),
            "width": self.width,
            "height": self.height,
        }
        if with_name and self.name is not None:
            ref["name"] = self.name
        return ref

    def prompt_ref(self) -> AttachmentRef:
        """An inline prompt image's ``attachment`` in the original's key order (no ``name``)."""
        return {
            "attachmentId": self.attachment.id,
            "mediaType": self.media_type,
            "width": self.width,
            "height": self.height,
            "bytes": len(self.data),
        }


def admit(data: bytes, media_type: str, *, name: str | None = None) -> Image:
    """Decode ``data`` fully and check it against the limits; the admitted :class:`Image`."""
    if media_type not in MEDIA_TYPES.values():
        raise ImageRefused("type", f"Image type {media_type} is not accepted by this deployment.")
    if not data:
        raise ImageRefused("empty")
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageRefused("bytes")
    # Imported here: Pillow loads only when an image is admitted.
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    with warnings.catch_warnings():
        warnings.simplefilter("error", PILImage.DecompressionBombWarning)
        try:
            with PILImage.open(io.BytesIO(data)) as probe:
                detected = MEDIA_TYPES.get(str(probe.format))
                width, height = probe.size
                if detected is None:
                    raise ImageRefused("malformed")
                if detected != media_type:
                    raise ImageRefused("mismatch")
                if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
                    raise ImageRefused("side")
                if width * height > MAX_IMAGE_PIXELS:
                    raise ImageRefused("pixels")
                probe.load()  # the full decode: a truncated or corrupt image is refused here
        except ImageRefused:
            raise
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
            raise ImageRefused("malformed") from exc
        except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning) as exc:
            raise ImageRefused("pixels") from exc
    if width < 1 or height < 1:
        raise ImageRefused("empty")
    return Image(data, media_type, width, height, name)

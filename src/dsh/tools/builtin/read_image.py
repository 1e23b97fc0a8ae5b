"""``read_image``: show the model an image file, stored once as a session attachment.

The original's checks, in its order and words: a blank path, a name that is not
PNG/JPEG/WebP/GIF, no attachment store, a model without image input (the text route: the
call is refused and the turn goes on) — all before the file is touched; then not found /
not a regular file, the 3670016-byte cap, and the attachment rules (per-side, decoded
pixels, a format that is not the extension's, malformed data). Nothing is stored unless
every check passes. The result is the text envelope and an ``image`` block whose
``attachment`` is the original's reference (``sha256:…`` id, type, bytes, size, name).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from dsh.errors import ToolError
from dsh.events.messages import Block, text_block
from dsh.tools.base import Tool, ToolContext, ToolLocation, ToolOutput
from dsh.tools.builtin._base import file_locations, file_title, not_found, quoted, read_regular, real_key
from dsh.tools.codes import FS_TOO_LARGE, tool_error
from dsh.tools.images import (
    EXTENSIONS,
    MAX_IMAGE_BYTES,
    MAX_IMAGE_PIXELS,
    MAX_IMAGE_SIDE,
    ImageRefused,
    admit,
)
from dsh.tools.schema import ToolArgs
from dsh.tools.workspace import ResolvedPath, resolve_path


class ReadImageArgs(ToolArgs):
    file_path: str = Field(description="Path to the image file, resolved by the filesystem backend.")


def _name(shown: str) -> str:
    base = os.path.basename(shown)
    return "".join(c for c in base if c.isprintable()).strip()[:255]


def _too_large(path: ResolvedPath, size: int) -> ToolError:
    return tool_error(
        f"cannot read {quoted(path)}: {size} bytes exceeds the {MAX_IMAGE_BYTES}-byte limit", FS_TOO_LARGE
    )


def _refusal(exc: ImageRefused, path: ResolvedPath, media_type: str) -> str:
    where = f"cannot read {quoted(path)}"
    match exc.kind:
        case "side":
            return f"{where}: at least one image side exceeds the {MAX_IMAGE_SIDE}px limit; downscale the image and read the smaller copy"  # noqa: E501
        case "pixels":
            return f"{where}: the image exceeds the {MAX_IMAGE_PIXELS}-pixel decoded-size limit; downscale the image and read the smaller copy"  # noqa: E501
        case "mismatch":
            ext = Path(path.shown).suffix
            return (
                f"{where}: the {ext} extension declares {media_type}, but the bytes use a different image "
                "format; rename the file to match its actual format if it is PNG/JPEG/WebP/GIF, or convert "
                "it to one of those formats"
            )
    return str(exc)


class ReadImageTool(Tool[ReadImageArgs]):
    """Read an image file for a model that takes images."""

    name = "read_image"
    description = (
        "Read a PNG/JPEG/WebP/GIF file and return the image itself. Requires the current model to "
        "accept image input."
    )
    args_model = ReadImageArgs
    concurrency_safe = True
    acp_kind = "read"

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        return file_title("Read image", args)

    def acp_locations(self, args: Mapping[str, Any]) -> tuple[ToolLocation, ...]:
        return file_locations(args)

    async def call(self, args: ReadImageArgs, ctx: ToolContext) -> ToolOutput:
        raw = args.file_path
        if not raw.strip():
            raise tool_error("file_path must be a non-empty string")
        media_type = EXTENSIONS.get(Path(raw.strip()).suffix.lower())
        if media_type is None:
            raise tool_error(f'cannot read "{raw}": read_image only accepts PNG/JPEG/WebP/GIF paths')
        if ctx.attachments is None:
            raise tool_error(f'cannot read "{raw}" as an image: no attachment service is mounted')
        if not ctx.model:
            raise tool_error(
                f'cannot read "{raw}" as an image: the current model route could not be resolved'
            )
        if not ctx.image_input:
            raise tool_error(
                f'cannot read "{raw}" as an image: model "{ctx.model}" does not declare image input; '
                "switch to an image-capable model to read images"
            )
        path = resolve_path(ctx, raw, reading=True)
        data = await asyncio.to_thread(self._read, path, ctx)
        try:
            image = admit(data, media_type, name=_name(str(path.shown)))
        except ImageRefused as exc:
            raise tool_error(_refusal(exc, path, media_type)) from exc
        await ctx.attachments.put_attachment(image.attachment)
        text = (
            f"<path>{path.shown}</path>\n<type>image</type>\n<content>\n"
            f"{media_type} image, {image.width}x{image.height} px, {len(data)} bytes\n</content>"
        )
        block: Block = {"type": "image", "attachment": image.ref(with_name=True)}
        return ToolOutput([text_block(text), block])

    @staticmethod
    def _read(path: ResolvedPath, ctx: ToolContext) -> bytes:
        try:
            size = os.stat(path.real).st_size
        except OSError:
            size = 0
        if size > MAX_IMAGE_BYTES:
            raise _too_large(path, size)
        loaded = read_regular("read", path)
        if loaded is None:
            ctx.files.saw_absent(real_key(path))
            raise not_found("read", path)
        data, st = loaded
        if len(data) > MAX_IMAGE_BYTES:
            raise _too_large(path, len(data))
        ctx.files.saw_present(real_key(path), st)
        return data

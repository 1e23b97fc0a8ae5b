"""An MCP ``tools/call`` result as a dsh tool result: the one mapping of its content kinds.

- ``text`` → a text block; ``isError: true`` → an error result (code ``MCP_TOOL_ERROR``);
- ``image`` → an image block stored in the session's attachments when the model takes
  images (admitted by ``dsh.tools.images``), else a text line naming it;
- ``audio`` → a text line naming it (no model input for audio);
- ``resource`` (embedded) → its text, or a line naming a binary one; ``resource_link`` → a
  line naming it;
- ``structuredContent`` → compact JSON text when no other content says it, and always in the
  meta (``structuredContent``), which also names the server, the tool and the duration.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Final, assert_never

from dsh.events.messages import Block, text_block
from dsh.jsonx import dumps
from dsh.tools import ToolContext, ToolOutput
from dsh.tools.images import ImageRefused, admit
from mcp import types as mt

MCP_TOOL_ERROR: Final = "MCP_TOOL_ERROR"


async def _image(item: mt.ImageContent, ctx: ToolContext) -> Block:
    named = f"[image: {item.mimeType}, {len(item.data) * 3 // 4} bytes (base64)]"
    if ctx.attachments is None or not ctx.image_input:
        return text_block(f"{named} — not shown: the model does not take images")
    try:
        image = admit(base64.b64decode(item.data, validate=True), item.mimeType)
    except (ImageRefused, binascii.Error, ValueError) as exc:
        return text_block(f"{named} — not shown: {exc}")
    await ctx.attachments.put_attachment(image.attachment)
    return {"type": "image", "attachment": image.ref()}


def _resource(item: mt.EmbeddedResource) -> Block:
    resource = item.resource
    if isinstance(resource, mt.TextResourceContents):
        return text_block(resource.text)
    return text_block(f"[resource {resource.uri}: {resource.mimeType or 'binary'}, not shown]")


async def _block(item: mt.ContentBlock, ctx: ToolContext) -> Block:
    match item:
        case mt.TextContent():
            return text_block(item.text)
        case mt.ImageContent():
            return await _image(item, ctx)
        case mt.AudioContent():
            return text_block(f"[audio: {item.mimeType}, not shown]")
        case mt.EmbeddedResource():
            return _resource(item)
        case mt.ResourceLink():
            return text_block(f"[resource link: {item.uri}{f' ({item.name})' if item.name else ''}]")
    assert_never(item)


async def tool_output(
    result: mt.CallToolResult, ctx: ToolContext, *, server: str, tool: str, duration_ms: int
) -> ToolOutput:
    """``result`` as the tool result the model sees and the log keeps."""
    blocks = [await _block(item, ctx) for item in result.content]
    meta: dict[str, Any] = {"mcp": {"server": server, "tool": tool, "durationMs": duration_ms}}
    if result.structuredContent is not None:
        meta["structuredContent"] = result.structuredContent
        if not blocks:
            blocks = [text_block(dumps(result.structuredContent).decode())]
    if not blocks:
        blocks = [text_block("(no output)")]
    return ToolOutput(
        blocks, is_error=result.isError, code=MCP_TOOL_ERROR if result.isError else None, meta=meta
    )

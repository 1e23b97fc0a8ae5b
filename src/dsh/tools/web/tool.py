"""The ``web_fetch`` tool: the original's schema and result text, served in a replay.

``Fetched <final url> (HTTP <status>)``, a blank line, then the body — HTML as Markdown
(:mod:`dsh.tools.web.markdown`), text as is. The whole text stays within 200,000
characters; a cut one (by the fetch limits or this cap) ends with the original's
``(Content truncated. …)`` line. ``meta`` is ``{url, statusCode, truncated}``. Any final
status (404, 500) is an ordinary result. The result depends on the network, so a replay
serves the recorded one (``reruns_in_replay = False``) instead of fetching.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from dsh.tools.base import Tool, ToolContext, ToolKind, ToolOutput, arg_text
from dsh.tools.codes import tool_error
from dsh.tools.schema import ToolArgs
from dsh.tools.web.policy import FetchPolicy, Resolver

if TYPE_CHECKING:
    import httpx

MAX_OUTPUT_CHARS = 200_000
TRUNCATED = "\n\n(Content truncated. Fetch a more specific URL or section for the full text.)"
ALLOW_PRIVATE_ENV = "DSH_WEB_ALLOW_PRIVATE"
"""``1``: ``web_fetch`` may fetch private and loopback addresses (a local dev server)."""


class WebFetchArgs(ToolArgs):
    url: str = Field(description="The HTTP(S) URL to fetch.")


def result_text(url: str, status: int, body: str, truncated: bool) -> tuple[str, bool]:
    """The whole result text within :data:`MAX_OUTPUT_CHARS`, and whether it was cut."""
    text = f"Fetched {url} (HTTP {status})\n\n{body}"
    if len(text) > MAX_OUTPUT_CHARS:
        truncated = True
    if truncated:
        text = text[: MAX_OUTPUT_CHARS - len(TRUNCATED)].rstrip() + TRUNCATED
    return text, truncated


class WebFetchTool(Tool[WebFetchArgs]):
    """Fetch one HTTP(S) URL as text (``policy``: limits and whether private hosts are allowed;
    ``transport``, ``resolver``: the HTTP client's transport and the name resolution, for tests)."""

    name = "web_fetch"
    description = "Fetch the content of a specific HTTP(S) URL and return it decoded to text."
    args_model = WebFetchArgs
    concurrency_safe = True
    reruns_in_replay = False
    acp_kind: ToolKind = "fetch"

    def __init__(
        self,
        policy: FetchPolicy | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self.policy = policy or FetchPolicy(allow_private=os.environ.get(ALLOW_PRIVATE_ENV) == "1")
        self._transport = transport
        self._resolver = resolver

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        url = arg_text(args, "url")
        return f"Fetch {url}" if url else None

    async def call(self, args: WebFetchArgs, ctx: ToolContext) -> ToolOutput:
        raw = args.url.strip()
        if not raw:
            raise tool_error("url must be a non-empty string")
        # Imported here: the HTTP client and the HTML parser load only when a page is fetched.
        from dsh.tools.web.fetch import fetch
        from dsh.tools.web.markdown import html_to_markdown

        page = await fetch(raw, self.policy, transport=self._transport, resolver=self._resolver)
        body = html_to_markdown(page.text[:MAX_OUTPUT_CHARS]) if page.html else page.text
        text, truncated = result_text(
            page.url, page.status, body, page.truncated or len(page.text) > MAX_OUTPUT_CHARS
        )
        return ToolOutput.text(
            text, meta={"url": page.url, "statusCode": page.status, "truncated": truncated}
        )

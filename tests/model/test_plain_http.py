"""A plain-HTTP base URL (a local server) needs no TLS: the model opens and calls it without
loading a certificate store, so a broken ``SSL_CERT_FILE`` (or none on the machine) does not
stop it (an ``https`` URL verifies as ever)."""

from __future__ import annotations

import pytest

from dsh.model.openai_compat import OpenAICompatModel
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.model.conftest import KEY, assemble, collect


async def test_a_plain_http_provider_needs_no_certificate_store(
    server: OpenAICompatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/dsh-test-ca.pem")
    server.enqueue(stream_reply(text="ok"))
    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY, default_model="m") as model:
        result = assemble(await collect(model))
    assert result.failure is None
    assert result.content == [{"type": "text", "text": "ok"}]

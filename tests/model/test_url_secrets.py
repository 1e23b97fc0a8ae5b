"""A password in the base URL (``https://user:pass@host``) is masked wherever the URL is shown."""

from __future__ import annotations

import json

import pytest

from dsh.errors import MissingCredentialError
from dsh.model.openai_compat import OpenAICompatModel
from dsh.model.settings import resolve_provider
from dsh.model.urls import redact_url
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import http_error

from .conftest import KEY, closed_port, collect, failure, request

PASSWORD = "pa55-w0rd-SECRET"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://api.deepseek.com", "https://api.deepseek.com"),
        ("https://alice:pw@gw.example/v1?x=1", "https://alice:***@gw.example/v1?x=1"),
        ("https://alice:p:w@rd@gw.example:8443/v1", "https://alice:***@gw.example:8443/v1"),
        ("http://:pw@127.0.0.1:9/v1", "http://:***@127.0.0.1:9/v1"),
        ("https://alice@gw.example/v1", "https://alice@gw.example/v1"),
        ("https://alice:pw@[::1]:8080/v1", "https://alice:***@[::1]:8080/v1"),
        ("not a url", "not a url"),
        ("http://[::1:pw@broken", "http://***@broken"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_provider_settings_never_show_the_password_or_the_key() -> None:
    url = f"https://alice:{PASSWORD}@gw.example/v1"
    settings = resolve_provider(api_key=KEY, base_url=url, env={})
    assert settings.base_url == url, "the real URL is kept to connect with"
    shown = repr(settings) + str(settings)
    assert PASSWORD not in shown and KEY not in shown
    assert "https://alice:***@gw.example/v1" in shown


async def test_the_adapter_masks_the_password_in_repr_and_failures() -> None:
    url = f"http://alice:{PASSWORD}@127.0.0.1:{closed_port()}/v1"
    async with OpenAICompatModel(base_url=url, api_key=KEY) as model:
        chunks = await collect(model, request())
        text = json.dumps(chunks) + repr(model) + str(model)
    assert failure(chunks)["code"] == "CONNECTION_REFUSED"
    assert "alice:***@127.0.0.1" in failure(chunks)["message"]
    assert PASSWORD not in text and KEY not in text
    with pytest.raises(MissingCredentialError) as info:
        OpenAICompatModel(base_url=url, api_key="")
    assert PASSWORD not in str(info.value) and "alice:***@" in str(info.value)


async def test_a_provider_echoing_the_password_is_scrubbed(server: OpenAICompatServer) -> None:
    url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
    server.enqueue(http_error(401, f"bad credentials alice:{PASSWORD} for {url}"))
    async with OpenAICompatModel(base_url=url, api_key=KEY) as model:
        got = failure(await collect(model, request()))
    assert got["code"] == "AUTH"
    assert PASSWORD not in got["message"] and "alice:***@" in got["message"]

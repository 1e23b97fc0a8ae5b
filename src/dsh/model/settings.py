"""Which OpenAI-compatible provider to talk to: flags first, then the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from dsh.errors import MissingCredentialError

DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEFAULT_MODEL = "deepseek-chat"


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """Base URL, key and model of a live provider. ``repr`` never shows the key."""

    base_url: str
    model: str
    api_key: str = field(repr=False)


def resolve_provider(
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ProviderSettings:
    """Flags win; then ``DEEPSEEK_API_KEY``/``DSH_API_KEY``, ``DSH_BASE_URL``/
    ``DEEPSEEK_BASE_URL`` (default DeepSeek) and ``DSH_MODEL`` (default deepseek-chat).

    Raises :class:`MissingCredentialError` (one line saying what to set) without a key.
    """
    env = os.environ if env is None else env
    key = api_key or env.get("DEEPSEEK_API_KEY") or env.get("DSH_API_KEY")
    if not key:
        raise MissingCredentialError(
            "no API key: pass --api-key or set DEEPSEEK_API_KEY "
            "(or DSH_API_KEY and DSH_BASE_URL for another OpenAI-compatible provider)"
        )
    url = base_url or env.get("DSH_BASE_URL") or env.get("DEEPSEEK_BASE_URL") or DEEPSEEK_BASE_URL
    name = model or env.get("DSH_MODEL") or DEFAULT_MODEL
    return ProviderSettings(base_url=url, model=name, api_key=key)

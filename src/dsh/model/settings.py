"""Which OpenAI-compatible provider to talk to (flags first, then the environment), and the
one place a live model is built from it (:meth:`ProviderSettings.open_model`).

A base URL may carry credentials (``https://user:pass@gateway/v1``): it is shown through
:func:`dsh.model.urls.redact_url`, so the password never reaches a ``repr``, an error or a log.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dsh.errors import MissingCredentialError
from dsh.model.urls import is_local, redact_url
from dsh.procfs import scrub_secret

if TYPE_CHECKING:
    from dsh.model.openai_compat import OpenAICompatModel

DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEFAULT_MODEL = "deepseek-chat"


LOCAL_API_KEY = "local"
"""The key sent to a base URL on this machine when none is configured (local servers need none)."""


@dataclass(frozen=True, slots=True, repr=False)
class ProviderSettings:
    """Base URL, key and model of a live provider. ``repr`` never shows the key, and shows the
    base URL with its password masked (:func:`redact_url`); ``base_url`` keeps the real one."""

    base_url: str
    model: str
    api_key: str = field(repr=False)

    def __repr__(self) -> str:
        return f"ProviderSettings(base_url={redact_url(self.base_url)!r}, model={self.model!r})"

    def open_model(self) -> OpenAICompatModel:
        """The live model of these settings (its ``model_name`` is ``model``): the one place a
        composition root builds one. The key is first overwritten in this process's
        ``/proc/<pid>/environ`` and ``cmdline`` and the process made not dumpable
        (:func:`dsh.procfs.scrub_secret`), so no command the agent runs can read it there."""
        scrub_secret(self.api_key)
        # Imported only now: the SDK costs ~250 ms of start-up that keyless commands never pay.
        from dsh.model.openai_compat import OpenAICompatModel

        return OpenAICompatModel(base_url=self.base_url, api_key=self.api_key, model=self.model)


def resolve_provider(
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    env: Mapping[str, str] | None = None,
    key_option: str | None = "--api-key",
) -> ProviderSettings:
    """Flags win; then ``DEEPSEEK_API_KEY``/``DSH_API_KEY``, ``DSH_BASE_URL``/
    ``DEEPSEEK_BASE_URL`` (default DeepSeek) and ``DSH_MODEL`` (default deepseek-chat).

    Raises :class:`MissingCredentialError` (one line saying what to set) without a key,
    unless the base URL is on this machine (:func:`is_local`): a local server gets
    :data:`LOCAL_API_KEY`. ``key_option``: the caller's own option for the key, named in
    that line (``None``: the caller has none, as the pytest plugins; only the variables are).
    """
    env = os.environ if env is None else env
    url = base_url or env.get("DSH_BASE_URL") or env.get("DEEPSEEK_BASE_URL") or DEEPSEEK_BASE_URL
    key = api_key or env.get("DEEPSEEK_API_KEY") or env.get("DSH_API_KEY")
    if not key and is_local(url):
        key = LOCAL_API_KEY
    if not key:
        raise MissingCredentialError(
            f"no API key: {f'pass {key_option} or ' if key_option else ''}set DEEPSEEK_API_KEY "
            "(or DSH_API_KEY and DSH_BASE_URL for another OpenAI-compatible provider)"
        )
    return ProviderSettings(base_url=url, model=model_name(model, env), api_key=key)


def model_name(model: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The model id: ``model`` (a flag), else ``$DSH_MODEL``, else :data:`DEFAULT_MODEL`."""
    env = os.environ if env is None else env
    return model or env.get("DSH_MODEL") or DEFAULT_MODEL

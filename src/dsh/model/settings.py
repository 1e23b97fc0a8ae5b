"""Which OpenAI-compatible provider to talk to: flags first, then the environment.

A base URL may carry credentials (``https://user:pass@gateway/v1``): :func:`redact_url` is
how it is shown, so the password never reaches a ``repr``, an error or a log.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from dsh.errors import MissingCredentialError

DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEFAULT_MODEL = "deepseek-chat"


LOCAL_API_KEY = "local"
"""The key sent to a base URL on this machine when none is configured (local servers need none)."""

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def is_local(url: str) -> bool:
    """Whether ``url``'s host is this machine: ``localhost``, ``127.0.0.1`` or ``[::1]``."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return False
    return host is not None and (host in _LOCAL_HOSTS or host.endswith(".localhost"))


_USERINFO = re.compile(r"://[^/?#]*@")


def redact_url(url: str) -> str:
    """``url`` with the password of its userinfo replaced by ``***`` (``https://user:***@host``).

    The user name, host, path and query are kept; a URL too malformed to parse has its
    whole userinfo masked.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return _USERINFO.sub("://***@", url)
    if password is None:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def url_password(url: str) -> str | None:
    """The password in ``url``'s userinfo, if any (to scrub it from provider wording)."""
    try:
        return urllib.parse.urlsplit(url).password
    except ValueError:
        return None


@dataclass(frozen=True, slots=True, repr=False)
class ProviderSettings:
    """Base URL, key and model of a live provider. ``repr`` never shows the key, and shows the
    base URL with its password masked (:func:`redact_url`); ``base_url`` keeps the real one."""

    base_url: str
    model: str
    api_key: str = field(repr=False)

    def __repr__(self) -> str:
        return f"ProviderSettings(base_url={redact_url(self.base_url)!r}, model={self.model!r})"


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

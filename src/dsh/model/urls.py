"""Provider base URLs: whether one is on this machine, and how one is shown without its password.

A base URL may carry credentials (``https://user:pass@gateway/v1``): :func:`redact_url` is
how it is shown, so the password never reaches a ``repr``, an error or a log.
"""

from __future__ import annotations

import re
import urllib.parse

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

"""The environment a tool's child process gets: the parent's, minus secrets, plus the tool variables.

Every process a tool starts (``bash`` now, hooks later) takes its environment from
:func:`tool_environment`, so the rule lives here only. Removed from the parent's
environment:

- the provider keys dsh reads: ``DEEPSEEK_API_KEY``, ``DSH_API_KEY``, ``OPENAI_API_KEY``;
- every other name ending in ``_API_KEY`` (the usual spelling of a provider key);
- every name listed in ``DSH_SECRET_ENV`` (comma- or space-separated), for secrets with
  other names (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ...);
- every variable whose value is a URL carrying a password (``scheme://user:pass@host``,
  e.g. a PostgreSQL ``DSH_STORE``).

Names ending in ``_TOKEN``/``_SECRET`` are *not* removed by default: many workflows a user
asks for (``gh``, cloud CLIs) need them; list them in ``DSH_SECRET_ENV`` to withhold them.
Added (as the original does): ``NO_COLOR=1``, ``TERM=dumb``, ``PAGER=cat``,
``GIT_PAGER=cat``, ``DSH_SHELL=1`` and ``DSH_SESSION_ID=<session id>``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final

from dsh.redact.patterns import PROVIDER_KEY_VARIABLES

SECRET_SUFFIXES: Final = ("_API_KEY",)
SECRET_ENV_SETTING: Final = "DSH_SECRET_ENV"
_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:[^/@\s]+@")

TOOL_VARIABLES: Final = {
    "NO_COLOR": "1",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "DSH_SHELL": "1",
}


def secret_names(env: Mapping[str, str]) -> set[str]:
    """The names in ``env`` that must not reach a tool."""
    listed = {name for name in re.split(r"[,\s]+", env.get(SECRET_ENV_SETTING, "")) if name}
    return {
        name
        for name, value in env.items()
        if name in PROVIDER_KEY_VARIABLES
        or name.upper().endswith(SECRET_SUFFIXES)
        or name in listed
        or _URL_WITH_PASSWORD.match(value)
    }


def secret_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the variables of ``env`` (default ``os.environ``) that :func:`secret_names`
    withholds: what :mod:`dsh.tools.redaction` scrubs from outputs besides the model's key."""
    env = os.environ if env is None else env
    return tuple(env[name] for name in sorted(secret_names(env)))


def tool_environment(session_id: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) without secrets, plus the tool variables for ``session_id``."""
    env = dict(os.environ if base is None else base)
    for name in secret_names(env):
        del env[name]
    env.update(TOOL_VARIABLES)
    env["DSH_SESSION_ID"] = session_id
    return env

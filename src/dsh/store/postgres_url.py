"""PostgreSQL store URLs: parsing, the ``schema`` parameter, validation and password scrubbing.

A store URL is a libpq connection URI (``postgresql://`` or ``postgres://``) plus one
parameter of our own, ``schema=NAME``: the schema that holds the dsh tables (created on
first use when missing). Without it the connection's ``search_path`` decides, so libpq's
``options=-csearch_path%3DNAME`` works too. A password in the URL never appears in a
message: :attr:`PostgresTarget.label` is the URL with the password replaced by ``***``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from dsh.errors import UsageError

SCHEMES: Final = ("postgresql", "postgres")
SCHEMA_PARAM: Final = "schema"
MAX_IDENTIFIER_BYTES: Final = 63
"""PostgreSQL truncates longer identifiers (``NAMEDATALEN - 1``); we refuse them instead."""

_HIDDEN: Final = "***"


@dataclass(frozen=True, slots=True)
class PostgresTarget:
    """Where a PostgreSQL store lives: what libpq gets, our schema, and a printable label."""

    conninfo: str = field(repr=False)
    """The URL without our ``schema`` parameter (what libpq parses; may hold a password)."""
    schema: str | None
    label: str
    """The URL with any password replaced by ``***``: safe for messages."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Password spellings (raw and decoded) to scrub from foreign messages."""

    def scrub(self, text: str) -> str:
        """``text`` with every password spelling replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, _HIDDEN)
        return text


def _scrubbed_netloc(netloc: str) -> tuple[str, list[str]]:
    userinfo, at, hosts = netloc.rpartition("@")
    if not at:
        return netloc, []
    user, colon, password = userinfo.partition(":")
    if not colon:
        return netloc, []
    return f"{user}:{_HIDDEN}@{hosts}", [password, unquote(password)]


def _split_query(query: str) -> tuple[list[str], list[str], list[str]]:
    """``(kept parameters, schema values, password values)`` of a URL query string."""
    kept: list[str] = []
    schemas: list[str] = []
    passwords: list[str] = []
    for item in query.split("&") if query else []:
        key, _, value = item.partition("=")
        name = unquote(key)
        if name == SCHEMA_PARAM:
            schemas.append(unquote(value))
            continue
        if name == "password":
            passwords += [value, unquote(value)]
        kept.append(item)
    return kept, schemas, passwords


def _check_ports(params: Mapping[str, object], label: str) -> None:
    port = params.get("port")
    if not isinstance(port, str) or not port:
        return
    for one in port.split(","):
        if one and not (one.isdigit() and 0 < int(one) < 65536):
            raise UsageError(f"bad PostgreSQL store URL {label!r}: port {one!r} is not a TCP port number")


def check_schema_name(schema: str, label: str) -> str:
    """Refuse an empty or over-long schema name (PostgreSQL would silently truncate it)."""
    if not schema or "\x00" in schema:
        raise UsageError(f"bad PostgreSQL store URL {label!r}: the schema name must be non-empty")
    if len(schema.encode()) > MAX_IDENTIFIER_BYTES:
        raise UsageError(
            f"bad PostgreSQL store URL {label!r}: schema name {schema!r} is longer than "
            f"{MAX_IDENTIFIER_BYTES} bytes"
        )
    return schema


def parse_postgres_url(url: str, schema: str | None = None) -> PostgresTarget:
    """Split ``url`` into a libpq URI and our schema; refuse a malformed URL with a ``UsageError``.

    ``schema`` (when given) overrides a ``schema=`` parameter in the URL.
    """
    parts = urlsplit(url)
    netloc, secrets = _scrubbed_netloc(parts.netloc)
    kept, schemas, query_secrets = _split_query(parts.query)
    secrets += query_secrets
    shown_query = "&".join(
        f"{item.partition('=')[0]}={_HIDDEN}" if unquote(item.partition("=")[0]) == "password" else item
        for item in parts.query.split("&")
        if item
    )
    label = urlunsplit((parts.scheme, netloc, parts.path, shown_query, ""))
    if parts.scheme.lower() not in SCHEMES or not url.lower().startswith(tuple(f"{s}://" for s in SCHEMES)):
        raise UsageError(f"bad PostgreSQL store URL {label!r}: use postgresql://[user@]host[:port]/database")
    if parts.fragment:
        raise UsageError(f"bad PostgreSQL store URL {label!r}: a URL fragment ('#...') is not allowed")
    if len(schemas) > 1:
        raise UsageError(f"bad PostgreSQL store URL {label!r}: give the schema parameter once")
    chosen = schema if schema is not None else (schemas[0] if schemas else None)
    if chosen is not None:
        check_schema_name(chosen, label)
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(kept), ""))
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        for secret in secrets:
            reason = reason.replace(secret, _HIDDEN) if secret else reason
        raise UsageError(f"bad PostgreSQL store URL {label!r}: {reason}") from None
    _check_ports(params, label)
    if schema is not None and schema not in schemas:
        label = f"{label} (schema {schema})"
    return PostgresTarget(conninfo, chosen, label, tuple(s for s in secrets if s))

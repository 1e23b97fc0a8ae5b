"""Scratch PostgreSQL schemas for tests: find the test server, name a fresh schema, drop it after.

Run the store contract suite (or your own tests) against a real server without touching
anything else in its database: every run works in its own schema ``dsh_test_<random>``,
which the store creates on first use and :func:`drop_schema` removes. The server is
``$DSH_TEST_POSTGRES_URL``, else ``postgresql://postgres@127.0.0.1:5432/test``.
"""

from __future__ import annotations

import os
import secrets
from typing import Final
from urllib.parse import quote, urlsplit

import psycopg
from psycopg import sql

from dsh.store.postgres_url import parse_postgres_url

DEFAULT_TEST_URL: Final = "postgresql://postgres@127.0.0.1:5432/test"
TEST_URL_ENV: Final = "DSH_TEST_POSTGRES_URL"
TEST_CONNECT_TIMEOUT_S: Final = 30
"""libpq ``connect_timeout`` of every test connection unless the URL sets one. A server on a
busy machine (a test suite's workers beside another job) can take longer than the store's
own default (10 s) to start a backend; a server that is not there still refuses at once."""


def server_url() -> str:
    """The PostgreSQL server tests use: ``$DSH_TEST_POSTGRES_URL`` or the local default, with
    ``connect_timeout=TEST_CONNECT_TIMEOUT_S`` unless it sets its own (every store, CLI process
    and worker a test opens from it waits that long for a connection)."""
    url = os.environ.get(TEST_URL_ENV) or DEFAULT_TEST_URL
    if "connect_timeout=" in urlsplit(url).query:
        return url
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}connect_timeout={TEST_CONNECT_TIMEOUT_S}"


def unreachable_reason(url: str, connect_timeout: int = TEST_CONNECT_TIMEOUT_S) -> str | None:
    """``None`` when ``url`` accepts a connection; otherwise why not (one line, no password).
    A refused connection answers at once; ``connect_timeout`` bounds a server slow to answer."""
    target = parse_postgres_url(url)
    try:
        with psycopg.connect(target.conninfo, connect_timeout=connect_timeout, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        text = str(exc).strip()
        reason = text.splitlines()[0] if text else type(exc).__name__
        return f"PostgreSQL not reachable at {target.label}: {target.scrub(reason)}"
    return None


def new_schema_name(prefix: str = "dsh_test") -> str:
    """A fresh schema name, ``<prefix>_<12 hex digits>``."""
    return f"{prefix}_{secrets.token_hex(6)}"


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``schema=<schema>`` added to its query (``url`` must not name one)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}schema={quote(schema, safe='')}"


def drop_schema(url: str, schema: str) -> None:
    """Drop ``schema`` and everything in it (no error when it does not exist)."""
    target = parse_postgres_url(url)
    with psycopg.connect(target.conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))

"""dsh.hosts: the one Host / Origin rule of dsh's local servers (DNS rebinding, cross-origin pages)."""

from __future__ import annotations

import pytest

from dsh.hosts import HostPolicy, split_host


@pytest.mark.parametrize(("value", "parsed"), [
    ("127.0.0.1:8080", ("127.0.0.1", 8080)), ("LocalHost", ("localhost", None)), ("[::1]:80", ("[::1]", 80)),
    ("[::1]", ("[::1]", None)), ("a.test:65535", ("a.test", 65535)),
    ("", None), ("a:b", None), ("a:65536", None), ("::1", None), ("[::1", None), ("a b", None),
    ("evil.example/x", None), ("user@127.0.0.1", None), ("a:1:2", None), ("a:", None), ("a:٣", None),
])  # fmt: skip
def test_split_host(value: str, parsed: tuple[str, int | None] | None) -> None:
    assert split_host(value) == parsed


def test_the_default_policy_answers_loopback_names_only() -> None:
    policy = HostPolicy()
    for host in ("127.0.0.1:1", "localhost", "LOCALHOST:8765", "[::1]:9"):
        assert policy.check({"host": host}) is None, host
    for host, status in [("evil.example", 421), ("127.0.0.2", 421), ("localhost.evil", 421), ("", 400),
                         ("a:b", 400)]:  # fmt: skip
        refused = policy.check({"host": host})
        assert refused is not None and refused.status == status, host
    refused = policy.check({})
    assert refused is not None and refused.status == 400


def test_allow_host_entries_and_the_bound_address() -> None:
    policy = HostPolicy(["Gw.Test", "box.test:8443", "fe80::1", "[fe80::2]:7"], bound="192.168.1.5")
    assert policy.check({"host": "gw.test:1"}) is None
    assert policy.check({"host": "box.test:8443"}) is None
    assert policy.check({"host": "box.test:8444"}) is not None
    assert policy.check({"host": "[fe80::1]:5"}) is None and policy.check({"host": "[fe80::2]:7"}) is None
    assert policy.check({"host": "192.168.1.5:80"}) is None
    assert HostPolicy(bound="0.0.0.0").check({"host": "0.0.0.0"}) is not None  # a wildcard names no host
    with pytest.raises(ValueError, match="--allow-host 'a b'"):
        HostPolicy(["a b"])


def test_an_origin_must_be_the_request_s_own_or_allowed() -> None:
    policy = HostPolicy(["app.test"])
    ok = {"host": "127.0.0.1:8765"}
    assert policy.check({**ok, "origin": "http://127.0.0.1:8765"}) is None
    assert policy.check({**ok, "origin": "https://127.0.0.1:8765"}) is None
    assert policy.check({**ok, "origin": "http://app.test"}) is None
    for origin in ("http://evil.example", "null", "http://127.0.0.1:8766", "http://localhost:8765",
                   "chrome-extension://abc", "http://127.0.0.1:8765.evil.example", ""):  # fmt: skip
        refused = policy.check({**ok, "origin": origin})
        assert refused is not None and refused.status == 403, origin

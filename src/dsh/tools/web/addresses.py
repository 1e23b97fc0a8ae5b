"""Which addresses ``web_fetch`` may connect to: the one home of that rule.

:func:`refused` judges one address (what a URL's host is, or what its name resolved to):

- a known cloud metadata service (:data:`METADATA`) is refused always, even where private
  hosts are allowed (``DSH_WEB_ALLOW_PRIVATE=1`` is for a local dev server, never for the
  instance's credentials);
- Teredo (``2001::/32``: the IPv4 address it reaches is obfuscated) and the local-use NAT64
  prefix ``64:ff9b:1::/48`` (the translator is the operator's and RFC 6052 lets the IPv4
  address sit at any of several offsets) are refused always, whatever they carry;
- an IPv6 address that carries an IPv4 address (:func:`embedded_ipv4`: IPv4-mapped
  ``::ffff:a.b.c.d``, IPv4-translated ``::ffff:0:a.b.c.d``, IPv4-compatible ``::a.b.c.d``,
  NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) is judged by that IPv4 address — on an
  IPv6-only host behind NAT64, ``64:ff9b::a9fe:a9fe`` *is* 169.254.169.254;
- otherwise, unless private hosts are allowed, anything but a global unicast address is
  refused (``ipaddress``'s ``is_global``, plus the blocks some Python patch releases count
  as global: :data:`NOT_GLOBAL`).

Stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import Final

IPAddress = IPv4Address | IPv6Address

METADATA: Final[Mapping[IPAddress, str]] = {
    ip_address("169.254.169.254"): "AWS, GCP, Azure, OpenStack, Oracle and others",
    ip_address("169.254.170.2"): "AWS ECS task metadata",
    ip_address("fd00:ec2::254"): "AWS, over IPv6",
    ip_address("fe80::a9fe:a9fe"): "OpenStack, over IPv6",
    ip_address("168.63.129.16"): "Azure wireserver",
    ip_address("192.0.0.192"): "Oracle Cloud",
    ip_address("100.100.100.200"): "Alibaba Cloud",
}
"""Cloud metadata services (instance credentials live there) and whose they are; refused even
where private hosts are allowed."""

TEREDO: Final = IPv6Network("2001::/32")
NAT64: Final = IPv6Network("64:ff9b::/96")
NAT64_LOCAL: Final = IPv6Network("64:ff9b:1::/48")
SIX_TO_FOUR: Final = IPv6Network("2002::/16")
MAPPED: Final = IPv6Network("::ffff:0:0/96")
TRANSLATED: Final = IPv6Network("::ffff:0:0:0/96")
COMPATIBLE: Final = IPv6Network("::/96")

NOT_GLOBAL: Final[tuple[IPv4Network | IPv6Network, ...]] = (
    ip_network("0.0.0.0/8"),
    ip_network("100.64.0.0/10"),
    ip_network("192.0.0.0/24"),
    ip_network("fec0::/10"),
)
"""Blocks that are not global whatever the running Python's ``is_global`` says (3.11 before
3.11.10 calls ``192.0.0.0/24`` global; site-local ``fec0::/10`` is global to every version)."""

_PUBLIC_ONLY: Final = (
    "; web_fetch reaches public hosts only (allow private hosts in the web_fetch configuration to fetch it)"
)


def embedded_ipv4(ip: IPv6Address) -> IPv4Address | None:
    """The IPv4 address ``ip`` carries (mapped, translated, compatible, NAT64 ``/96``, 6to4), if any."""
    low = IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in MAPPED or ip in TRANSLATED or ip in NAT64:
        return low
    if ip in COMPATIBLE:
        return low if int(ip) > 1 else None  # ``::`` and ``::1`` are themselves, not IPv4
    if ip in SIX_TO_FOUR:
        return IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)
    return None


def _metadata(ip: IPAddress) -> str | None:
    name = METADATA.get(ip)
    return f"{ip}, a cloud metadata service ({name}); web_fetch never fetches it" if name else None


def _global(ip: IPAddress) -> bool:
    return ip.is_global and not ip.is_multicast and not any(ip in block for block in NOT_GLOBAL)


def refused(address: str, *, allow_private: bool) -> str | None:
    """Why ``web_fetch`` must not connect to ``address`` — the end of the one-line refusal
    ``blocked URL: HOST resolves to …`` — or ``None`` when it may."""
    try:
        ip = ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address[:100]!r}, which is not an IP address"
    why = _metadata(ip)
    if why is not None:
        return why
    if isinstance(ip, IPv6Address):
        if ip in TEREDO:
            return (
                f"{ip}, a Teredo address (the IPv4 address it reaches is hidden); web_fetch never fetches it"
            )
        if ip in NAT64_LOCAL:
            return (
                f"{ip}, in the local-use NAT64 prefix {NAT64_LOCAL} (the IPv4 address it reaches cannot be "
                "told); web_fetch never fetches it"
            )
        inner = embedded_ipv4(ip)
        if inner is not None:
            why = _metadata(inner)
            if why is not None:
                return f"{ip}, which embeds {why}"
            if allow_private or _global(inner):
                return None
            return f"the non-public address {ip} (it embeds the IPv4 address {inner}){_PUBLIC_ONLY}"
    if allow_private or _global(ip):
        return None
    return f"the non-public address {ip}{_PUBLIC_ONLY}"

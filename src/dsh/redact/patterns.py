"""What a secret looks like: the well-known token shapes, and which variables hold secrets.

Each :class:`Shape` has a kind (the ``KIND`` of its placeholder) and a regex; where only part
of the match is secret (``Bearer <token>``, ``scheme://user:<password>@``, an
``aws_secret_access_key = <value>`` assignment) the regex names that part ``s``. Every shape
is anchored against the characters that would continue it, so a token shape inside a longer
run (a base64 image, a sha256 id) is not a match; UUIDs match nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Shape:
    """One token shape: its placeholder kind, its pattern (group ``s``: the secret part) and
    the literals one of which every match contains (``lowered``: looked for in the lowercased
    text); a text holding none of them is not searched. No literals: always searched.
    ``leading``: every match starts with one of the literals (case-sensitive shapes only), so
    the search starts at the first of them."""

    kind: str
    pattern: str
    literals: tuple[str, ...] = ()
    lowered: bool = False
    leading: bool = False


SHAPES: Final[tuple[Shape, ...]] = (
    Shape(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
        ("PRIVATE KEY-----",),
    ),
    Shape(
        "provider-key",
        r"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-|or-v1-)?[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])",
        ("sk-",),
        leading=True,
    ),
    Shape(
        "github-token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        leading=True,
    ),
    Shape(
        "aws-access-key",
        r"(?<![A-Za-z0-9+/])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9+/=])",
        ("AKIA", "ASIA"),
        leading=True,
    ),
    Shape(
        "aws-secret-key",
        r"(?i:aws_?secret(?:_?access)?_?key)[\"']?\s*[:=]\s*[\"']?(?P<s>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        ("aws_secret", "awssecret"),
        lowered=True,
    ),
    Shape(
        "slack-token",
        r"(?<![A-Za-z0-9])xox[abpr]-[A-Za-z0-9-]{10,}",
        ("xoxa-", "xoxb-", "xoxp-", "xoxr-"),
        leading=True,
    ),
    Shape(
        "google-api-key",
        r"(?<![A-Za-z0-9+/_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z+/_-])",
        ("AIza",),
        leading=True,
    ),
    Shape(
        "jwt",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        ("eyJ",),
        leading=True,
    ),
    Shape("bearer", r"(?i:\bbearer)\s+(?P<s>[A-Za-z0-9._~+/-]{8,}=*)", ("bearer",), lowered=True),
    Shape("url-password", r"\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@\"'<>]+:(?P<s>[^@\s/\"'<>]+)@", ("://",)),
)
"""The well-known shapes, most specific first (a provider key inside ``Bearer …`` is a provider key)."""

SECRET_NAME: Final = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
"""An environment variable whose name matches holds a secret."""

MIN_SECRET_VALUE: Final = 8
"""Shorter values of such variables are not redacted (``1``, ``true``, a port)."""

PROVIDER_KEY_VARIABLES: Final = ("DEEPSEEK_API_KEY", "DSH_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""Where dsh reads provider keys: their values are the kind ``provider-key``."""

PLACEHOLDER: Final = re.compile(r"<secret:([a-z0-9-]+):([0-9a-f]{8})>")
"""``<secret:KIND:HASH8>``: what a redacted value becomes."""

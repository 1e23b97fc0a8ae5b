"""The redaction rule: every secret kind becomes ``<secret:KIND:HASH8>``; nothing else changes."""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import struct
import uuid
import zlib

import pytest

from dsh.errors import UsageError
from dsh.redact import PLACEHOLDER, Redactor, secret_values

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SAMPLES = {
    "provider-key": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "github-token": GITHUB,
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "slack-token": "xoxb-1234567890-abcdefghijkl",
    "google-api-key": "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "private-key": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    ),
}


def redactor(**kw: object) -> Redactor:
    return Redactor("salt-1", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_each_token_shape_is_replaced_whole(kind: str) -> None:
    secret = SAMPLES[kind]
    out = redactor().text(f"before {secret} after")
    assert secret not in out
    found = PLACEHOLDER.search(out)
    assert found is not None and found.group(1) == kind
    assert out == f"before {found.group()} after"


@pytest.mark.parametrize(
    ("text", "kept", "kind"),
    [
        ("Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer ", "bearer"),
        (
            'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
            'aws_secret_access_key = "',
            "aws-secret-key",
        ),
        ("postgresql://admin:hunter2pass@db.internal/app", "postgresql://admin:", "url-password"),
    ],
)
def test_only_the_secret_part_of_an_assignment_is_replaced(text: str, kept: str, kind: str) -> None:
    out = redactor().text(text)
    assert out.startswith(kept) and f"<secret:{kind}:" in out
    assert "hunter2pass" not in out and "abc.def-ghi_jkl" not in out and "EXAMPLEKEY" not in out


def test_placeholders_are_deterministic_per_salt() -> None:
    one = redactor().text(GITHUB)
    assert redactor().text(f"{GITHUB} and {GITHUB}") == f"{one} and {one}"
    assert Redactor("salt-2").text(GITHUB) != one
    other = "ghp_" + "Z" * 36
    assert redactor().text(other) != one
    digest = one.rsplit(":", 1)[1][:-1]
    assert len(digest) == 8 and int(digest, 16) >= 0


def test_environment_values_by_variable_name() -> None:
    environ = {
        "GITHUB_TOKEN": "tok-value-12345",
        "DB_PASSWORD": "p@ssw0rd-long",
        "MY_API_KEY": "short",  # under 8 characters: kept
        "HOME": "/home/someone-long",  # not a secret name
        "DEEPSEEK_API_KEY": "dk-0123456789abcdef",
    }
    values = secret_values(environ)
    assert values == {"tok-value-12345": "env", "p@ssw0rd-long": "env", "dk-0123456789abcdef": "provider-key"}
    r = Redactor.for_recording("s", environ=environ, provider_key="live-provider-key-xyz")
    out = r.text(
        "tok-value-12345 p@ssw0rd-long short /home/someone-long dk-0123456789abcdef live-provider-key-xyz"
    )
    assert out.split()[2:4] == ["short", "/home/someone-long"]
    assert [m.group(1) for m in PLACEHOLDER.finditer(out)] == ["env", "env", "provider-key", "provider-key"]


def test_json_values_keep_their_keys_and_shape() -> None:
    value = {"GITHUB": [GITHUB, 3, None, {"k": f"x {GITHUB}"}], "ok": True}
    out = redactor().value(value)
    assert set(out) == {"GITHUB", "ok"} and out["ok"] is True
    assert out["GITHUB"][1:3] == [3, None]
    assert GITHUB not in str(out)


def test_custom_regexes() -> None:
    r = redactor(custom=[r"ACME-\d{6}", r"pin=(?P<s>\d{4})"])
    assert r.text("id ACME-123456 pin=1234").startswith("id <secret:custom:")
    assert "pin=<secret:custom:" in r.text("pin=1234")
    with pytest.raises(UsageError, match=r"\(unclosed"):
        redactor(custom=["(unclosed"])


def _png(width: int, height: int) -> bytes:
    raw = b"".join(b"\0" + os.urandom(width * 3) for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_no_false_positives_on_ids_hashes_and_images() -> None:
    r = Redactor.for_recording("s", environ={})
    clean = [
        *(str(uuid.uuid4()) for _ in range(200)),
        *(hashlib.sha256(os.urandom(8)).hexdigest() for _ in range(200)),
        *(f"sha256:{hashlib.sha256(os.urandom(8)).hexdigest()}" for _ in range(50)),
        "data:image/png;base64," + base64.b64encode(_png(300, 300)).decode(),
        base64.b64encode(os.urandom(1_000_000)).decode(),
        "task-abcdefghijklmnopqrstuvwxyz0123 risk-assessment-for-the-quarter-2026",
        "git log 9fceb02d0ae598e95dc970b74767f19372d61af8",
    ]
    for text in clean:
        assert r.findings(text) == [], text[:80]


@pytest.mark.parametrize("cuts", [(5,), (3, 9, 20), tuple(range(1, 48)), (0, 0, 12)])
def test_pieces_redact_a_secret_split_across_pieces_as_one(cuts: tuple[int, ...]) -> None:
    text = f"token {GITHUB} end"
    bounds = [0, *cuts, len(text)]
    parts = [text[a:b] for a, b in itertools.pairwise(bounds)]
    out = redactor().pieces(parts)
    assert len(out) == len(parts)
    assert "".join(out) == redactor().text(text)
    assert not any(GITHUB[:6] in piece for piece in out)
    assert sum(piece.count("<secret:github-token:") for piece in out) == 1


def test_pieces_leave_clean_pieces_alone() -> None:
    parts = ["hello ", "wor", "ld"]
    assert redactor().pieces(parts) == parts


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_may_hold_never_misses_a_secret_the_rule_finds(kind: str) -> None:
    """The cheap test a writer passes clean events through by: never ``False`` on a text
    (or the JSON of a string) holding a secret — every shape, a secret value, a user regex."""
    import json

    rule = redactor(values={"hunter2-value-x": "env"})
    for text in (f"x {SAMPLES[kind]} y", json.dumps({"s": f"a\n{SAMPLES[kind]}\tb"})):
        assert rule.findings(json.loads(text)["s"] if text.startswith("{") else text)
        assert rule.may_hold(text)
    assert rule.may_hold(json.dumps({"v": 'quote"d hunter2-value-x'}))
    assert rule.may_hold('"Authorization: BEARER abcdefgh12345678"')
    assert not rule.may_hold("plain prose about light, high ground and skies")
    assert redactor(custom=["ACME-[0-9]+"]).may_hold("anything")

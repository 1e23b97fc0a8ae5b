"""The prefilter on a recording's scale: a recording's texts are tested in blocks (joined, each
unit of literals scanned from the end, a unit of many literals hopping between its anchor's
occurrences and falling back to one search per literal when the anchor is too common), and a
shape whose matches start with a literal is matched only where its literals are. Whatever
the path, a secret only the full rule finds — at a string's start or end, split across a
stream's deltas, in a tool result, in a nested field, among thousands of anchors — is
redacted, and each text's answer is the one it gets alone."""

from __future__ import annotations

from typing import Any

from dsh import jsonx
from dsh.events import Event
from dsh.events.redaction import json_values, redact_event, redact_events
from dsh.redact import PLACEHOLDER, Redactor
from dsh.redact.gate import LiteralGate

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijkl"
KEY = "sk-" + "proj-abcdefghijklmnopqrstuvwxyz012345"
SLACK = "xoxb-" + "1234567890-abcdefghijkl"
ENV = "hunter2-env-secret-value"
SECRETS = (GITHUB, PAT, KEY, SLACK, ENV)
SNAKE = "def some_name(first_arg, other_arg):\n    return first_arg._value_of_it\n" * 400
"""Code: thousands of ``_``, the anchor of the GitHub literals."""


def redactor() -> Redactor:
    return Redactor("salt-1", values={ENV: "env"})


def test_a_unit_of_many_literals_finds_a_literal_past_its_hops() -> None:
    gate = LiteralGate(["ghp_", "gho_", "github_pat_", "sk-"])
    underscores = "a_b" * 20_000
    middle = f"x{underscores[:30_001]}gho_{underscores}"
    for text in (f"ghp_{underscores}", f"{underscores}github_pat_", middle):
        assert gate(text), text[:20]
        assert gate.holding(["clean", text, "clean"]) == [False, True, False]
    assert not gate(f"gh_{underscores}github_pat{underscores}")
    assert gate.holding([f"gh_{underscores}", "sk-"]) == [False, True]
    for literal in ("ghp_", "github_pat_"):  # the hops run out at every distance from it
        for n in range(300):
            assert gate.holding(["x", literal + "_" * n, "y"]) == [False, True, False], (literal, n)


def test_texts_across_many_blocks_are_each_answered_as_alone() -> None:
    plain = ["ghp_", "gho_", "github_pat_", "sk-", "xox", "://"]
    lowered = ["bearer", "aws_secret", "awssecret"]
    gate = LiteralGate(plain, lowered)
    filler = "the log keeps every delta, " * 40
    placed = ["ghp_", "sk-", "xox", "BeArEr", "AWS_SECRET", "://", "github_pat_", "AwsSecret"]
    texts = []
    for i in range(600):  # about 1 MB: sixteen blocks, literals at starts, ends and block edges
        literal = placed[i % len(placed)] if i % 3 == 0 else ""
        texts.append(literal + filler + SNAKE[: i * 7] if i % 2 else filler + SNAKE[: i * 5] + literal)
    texts[17] = "é" + texts[17]  # a block not in ASCII: its byte offsets are not its offsets
    expected = [any(x in t for x in plain) or any(x in t.lower() for x in lowered) for t in texts]
    assert any(expected) and not all(expected)
    assert [gate(text) for text in texts] == expected
    assert gate.holding(texts) == expected
    assert gate.holding_utf8(text.encode() for text in texts) == expected


def _settlement(text_parts: list[str], nested: Any) -> dict[str, Any]:
    chunks = [{"type": "block-start", "index": 0, "blockType": "text"}]
    chunks += [{"type": "text-delta", "index": 0, "text": part} for part in text_parts]
    chunks.append({"type": "block-end", "index": 0, "block": {"type": "text", "text": "".join(text_parts)}})
    return {
        "message": {"role": "assistant", "content": [{"type": "text", "text": "".join(text_parts)}]},
        "deep": nested,
        "stream": {"chunks": chunks},
    }


def _events() -> list[Event]:
    """Many clean events around ones holding the secrets where only the full rule finds them."""
    clean = {"content": [{"type": "text", "text": "nothing to see " * 30}]}
    held: list[dict[str, Any]] = [
        {"content": [{"type": "text", "text": f"{GITHUB} at the start"}]},
        {"content": [{"type": "text", "text": f"at the end {KEY}"}]},
        {"output": SNAKE + PAT + SNAKE, "isError": False},  # a tool result among anchors
        _settlement(["see ", GITHUB[:3], GITHUB[3:9], GITHUB[9:], " ok"], {"a": [{"b": {"c": [SLACK]}}]}),
        {"env": {"list": ["x", {"y": f"{ENV}"}]}, "text": f"{SLACK}"},
    ]
    events = [Event("user/message", i, 0, clean) for i in range(300)]
    for n, data in enumerate(held):
        at = 50 * n + 7
        events[at] = Event("tool/result" if "output" in data else "user/message", at, 0, data)
    return events


def test_a_secret_only_the_full_rule_finds_is_redacted_in_a_recordings_events() -> None:
    events = _events()
    out = redact_events(events, redactor())
    written = b"\n".join(jsonx.dumps(e.data) for e in out).decode()
    for secret in SECRETS:
        assert secret not in written, secret[:8]
    deltas = [c["text"] for c in out[157].data["stream"]["chunks"] if c["type"] == "text-delta"]
    assert len(deltas) == 5 and PLACEHOLDER.fullmatch(deltas[1]) and deltas[2:4] == ["", ""]
    assert out == [redact_event(e, redactor()) for e in events]
    values = [{"line": e.data} for e in events if "stream" not in e.data]  # no stream: walked as values
    assert json_values(values, redactor()) == [{"line": e.data} for e in out if "stream" not in e.data]
    assert sum(a is not b for a, b in zip(out, events, strict=True)) == 5  # the clean ones kept as they are


def test_a_shape_matched_at_its_literals_finds_what_a_search_finds() -> None:
    rule = redactor()
    back_to_back = GITHUB + GITHUB[:-4] + " " + KEY + "sk-" + KEY + " " + SLACK * 2
    found = rule.findings(back_to_back)
    # a literal inside the match before it starts nothing; back-to-back tokens are one match
    assert [(f.kind, f.start, f.end) for f in found] == [
        ("github-token", 0, len(GITHUB) + 3),
        ("provider-key", back_to_back.index(KEY), back_to_back.index(" ", back_to_back.index(KEY))),
        ("slack-token", back_to_back.index(SLACK), len(back_to_back)),
    ]
    assert rule.findings("x" + GITHUB) == []  # a literal where the shape's start is not allowed
    bearer = "Authorization: BEARER abcdefgh12345"  # a shape looked for case-insensitively
    assert rule.text(bearer) == f"Authorization: BEARER {rule.placeholder('bearer', 'abcdefgh12345')}"
    url = "see https://user:hunter22@host/"  # a shape whose literal is inside its match
    assert rule.text(url) == f"see https://user:{rule.placeholder('url-password', 'hunter22')}@host/"
    assert [f.kind for f in rule.findings("_" + GITHUB + " " + GITHUB)] == ["github-token"]

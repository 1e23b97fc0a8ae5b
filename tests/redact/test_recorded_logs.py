"""A recording's logs are the events redacted one by one and then made portable, byte for byte,
though the writers encode each event once and walk only those whose line may hold a secret
(``redact_session``: the rule's gate over the lines) or holds the run's cwd (``portable``:
the cwd's JSON spelling in the line) — checked on generated sessions whose strings hold
secrets, the cwd, both, and a cwd JSON escapes (quotes, backslashes, control characters,
non-ASCII)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.events import Event, SessionHeader
from dsh.events.redaction import redact_event
from dsh.redact import Redactor
from dsh.snapshot.recording import portable, scenario_logs
from dsh.snapshot.redaction import redact_session
from dsh.store import LoadedSession
from dsh.store.logfile import encode_log

REDACTOR = Redactor("salt", values={"s3cr3t-v4lue": "env"})
ROOT = "11111111-2222-4333-8444-555555555555"


def _scrubbed(value: Any, cwd: str) -> Any:
    """The cwd written ``{{cwd}}`` in every string, walked everywhere (the reference)."""
    if isinstance(value, str):
        return value.replace(cwd, "{{cwd}}")
    if isinstance(value, dict):
        return {k: _scrubbed(v, cwd) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, cwd) for v in value]
    return value


def _reference(loaded: LoadedSession, cwd: str, redactor: Redactor | None) -> bytes:
    events = [redact_event(e, redactor) if redactor is not None else e for e in loaded.events]
    events = [Event(e.type, e.seq, e.time, _scrubbed(e.data, cwd), e.surface_op) for e in events]
    return encode_log(LoadedSession(loaded.header.evolve(cwd="{{cwd}}"), 0, events))


CWDS = st.sampled_from(["/work", '/tmp/a"b', "C:\\dir\\sub", "/home/é/π", "/t\tab", "/x</y"])
SECRETS = ["ghp_" + "a1" * 18, " sk-" + "k" * 24 + " ", "s3cr3t-v4lue"]
PIECES = st.sampled_from(["plain text ", *SECRETS, "{cwd}", "{cwd}/src", '"', "\\"])


def _session(cwd: str, texts: list[list[str]]) -> LoadedSession:
    events = []
    for seq, pieces in enumerate(texts):
        text = "".join(pieces).replace("{cwd}", cwd)
        deltas = [{"type": "text-delta", "index": 0, "text": p.replace("{cwd}", cwd)} for p in pieces]
        data = {"content": [{"type": "text", "text": text}], "stream": {"chunks": deltas}, "path": [text]}
        events.append(Event("user/message", seq, 0, data, "append"))
    return LoadedSession(SessionHeader(id=ROOT, created_at=0, cwd=cwd), 0, events)


@settings(max_examples=300, deadline=None)
@given(CWDS, st.lists(st.lists(PIECES, max_size=5), min_size=1, max_size=6), st.booleans())
def test_the_logs_are_the_events_redacted_then_made_portable(
    cwd: str, texts: list[list[str]], redacting: bool
) -> None:
    redactor = REDACTOR if redacting else None
    expected = _reference(_session(cwd, texts), cwd, redactor)
    logs = scenario_logs({ROOT: redact_session(_session(cwd, texts), redactor)}, ROOT, cwd)
    assert logs["session.jsonl"] == expected
    # a second write of the same sessions (their lines remembered) is the same bytes
    once = {ROOT: redact_session(_session(cwd, texts), redactor)}
    assert scenario_logs(once, ROOT, cwd) == scenario_logs(once, ROOT, cwd)


def test_a_cwd_no_json_can_hold_leaves_every_event_as_it_is() -> None:
    cwd = "/tmp/\udcff"  # a lone surrogate (a path not in UTF-8): no event's JSON holds it
    loaded = _session("/work", [["plain /work"]])
    out = portable(loaded, cwd)
    assert out.header.cwd == "{{cwd}}"
    assert [e.data for e in out.events] == [e.data for e in loaded.events]

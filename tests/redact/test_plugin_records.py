"""The pytest record modes redact what they write, keep the salt and the ``dsh_redact``
regexes in ``input.json`` so the replay matches, and scan what they wrote: a secret left in
a recorded file fails the record, naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response
from tests.replay.test_fixture import USER_TEST, _run
from tests.scenario_recipes import reply

GITHUB = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
PROMPT = f"dsh {GITHUB} ACME-123456"
INI = "[pytest]\ndsh_redact =\n    ACME-\\d{6}\n"
BREAK_REDACTION = (
    "import dsh.snapshot.fixture as f\nf.redact_sessions = lambda sessions, rule: dict(sessions)\n"
)


def _summary(req: RecordedRequest) -> Response:
    return reply("agent harness")


def _record(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    pytester.makefile(".ini", pytest=INI)
    pytester.makepyfile(test_user=USER_TEST.replace("PROMPT_TEXT", PROMPT))
    with OpenAICompatServer(handler=_summary) as server:
        env = {"DSH_API_KEY": "sk-test-plugin-0123456789", "DSH_BASE_URL": server.base_url}
        return _run(pytester, monkeypatch, env, "--dsh-snapshot=record")


def test_a_recorded_test_is_redacted_and_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(pytester, monkeypatch).assert_outcomes(passed=1)
    scenario = Path(pytester.path) / "recordings" / "summary"
    text = "".join(p.read_text() for p in scenario.iterdir())
    assert GITHUB not in text and "ACME-123456" not in text and "sk-test-plugin" not in text
    assert "<secret:github-token:" in text and "<secret:custom:" in text
    replay = json.loads((scenario / "input.json").read_text())["replay"]
    assert replay["salt"] and replay["redact"] == ["ACME-\\d{6}"]
    # the server is gone: the live prompt still holds the secrets, redacted the same way
    _run(pytester, monkeypatch, {}).assert_outcomes(passed=1)


def test_a_secret_left_in_a_recorded_file_fails_the_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(BREAK_REDACTION)  # a writer that forgot the rule
    result = _record(pytester, monkeypatch)
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    assert "still holds secrets" in out
    assert "recordings/summary/session.jsonl:" in out and ": github-token" in out
    assert GITHUB not in out

"""How ``dsh_recording`` reports a failure: at the call that failed, once.

A replay that diverges fails the test at the model call that diverged — a
``ReplayDivergenceError`` with the one-line reason, the diff and how to accept the change —
not at the user's own assertion with the real cause as a teardown ERROR. A record whose
model call fails says the failure (``AUTH``) and that nothing was written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, http_error
from tests.replay.test_fixture import USER_TEST, _run
from tests.scenario_recipes import reply


def _summary(req: RecordedRequest) -> Response:
    return reply("agent harness")


def _recorded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytester.makepyfile(test_user=USER_TEST.replace("PROMPT_TEXT", "dsh is an agent harness"))
    with OpenAICompatServer(handler=_summary) as server:
        env = {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url}
        _run(pytester, monkeypatch, env, "--dsh-snapshot=record").assert_outcomes(passed=1)
    return Path(pytester.path) / "recordings" / "summary"


def test_a_divergence_fails_the_test_at_the_call_with_the_diff_and_how_to_accept(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _recorded(pytester, monkeypatch)
    pytester.makepyfile(test_user=USER_TEST.replace("PROMPT_TEXT", "something else entirely"))
    changed = _run(pytester, monkeypatch, {})
    changed.assert_outcomes(failed=1, errors=0)
    out = changed.stdout.str()
    assert "dsh.errors.ReplayDivergenceAtCallError: scenario summary: " in out  # a ReplayDivergenceError
    assert "user message 1 differs from the recording" in out
    assert "+    Summarize in two words: something else entirely" in out, "the diff"
    assert "--dsh-snapshot=record" in out, "how to accept the change"
    assert "test_user.py:8: ReplayDivergenceAtCallError" in out, "raised from the user's own call"
    assert "AssertionError" not in out and "assert '' ==" not in out
    assert "at teardown" not in out and "ERROR at" not in out
    assert "dsh/loop/" not in out, "the traceback stops at the test's own call, not inside dsh"


def test_a_failed_record_says_why_and_that_nothing_was_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=USER_TEST.replace("PROMPT_TEXT", "dsh is an agent harness"))
    with OpenAICompatServer(handler=lambda r: http_error(401, "invalid api key")) as server:
        env = {"DSH_API_KEY": "sk-wrong", "DSH_BASE_URL": server.base_url}
        failed = _run(pytester, monkeypatch, env, "--dsh-snapshot=record")
    failed.assert_outcomes(failed=1, errors=0)
    out = failed.stdout.str()
    assert "AUTH" in out and "invalid api key" in out
    assert "nothing was written" in out
    assert "Event loop is closed" not in out and "RuntimeError" not in out
    assert "sk-wrong" not in out
    assert not (Path(pytester.path) / "recordings" / "summary").exists()

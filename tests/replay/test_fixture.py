"""The ``dsh_recording`` fixture: an ordinary test records once against a provider (the local
test server here) and then replays keylessly, asserting on its own code's output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response
from tests.scenario_recipes import reply

USER_TEST = '''
import asyncio

import pytest


async def shout_summary(agent, text):
    """The user's own code: asks the agent, post-processes the answer."""
    result = await agent.run_turn(f"Summarize in two words: {text}")
    return result.text.upper() + "!"


@pytest.mark.dsh_scenario("recordings/summary")
def test_summary(dsh_recording):
    async def go():
        agent = await dsh_recording.agent()
        return await shout_summary(agent, "PROMPT_TEXT")

    assert asyncio.run(go()) == "AGENT HARNESS!"
'''


def _summary(req: RecordedRequest) -> Response:
    return reply("agent harness")


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    return {**base, **extra}


def _run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], *args: str
) -> pytest.RunResult:
    for key in [k for k in os.environ if k.startswith(("DSH_", "DEEPSEEK_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=120)


def test_a_test_records_once_then_replays_keylessly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=USER_TEST.replace("PROMPT_TEXT", "dsh is an agent harness"))
    scenario = Path(pytester.path) / "recordings" / "summary"
    missing = _run(pytester, monkeypatch, {})
    missing.assert_outcomes(errors=1)
    assert "no recording yet" in missing.stdout.str()
    with OpenAICompatServer(handler=_summary) as server:
        recorded = _run(pytester, monkeypatch, {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url},
                        "--dsh-snapshot=record")  # fmt: skip
        assert server.requests
    recorded.assert_outcomes(passed=1)
    assert (scenario / "session.jsonl").is_file()
    assert "recordings written" in recorded.stdout.str()
    replayed = _run(pytester, monkeypatch, {})  # no key, server stopped
    replayed.assert_outcomes(passed=1)
    once = _run(pytester, monkeypatch, {}, "--dsh-snapshot=once")
    once.assert_outcomes(passed=1)


def test_a_test_whose_code_changed_fails_its_replay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=USER_TEST.replace("PROMPT_TEXT", "dsh is an agent harness"))
    with OpenAICompatServer(handler=_summary) as server:
        _run(pytester, monkeypatch, {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url},
             "--dsh-snapshot=record").assert_outcomes(passed=1)  # fmt: skip
    pytester.makepyfile(test_user=USER_TEST.replace("PROMPT_TEXT", "something else entirely"))
    changed = _run(pytester, monkeypatch, {})
    assert changed.ret != 0
    assert "user message 1 differs from the recording" in changed.stdout.str()

"""The ``dsh_recording`` fixture: an ordinary test records once against a provider (the local
test server here) and then replays keylessly, asserting on its own code's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


LIBRARY_CHILDREN_TEST = """
import asyncio

import pytest


@pytest.mark.dsh_scenario("recordings/children")
def test_children(dsh_recording):
    async def go():
        agent = await dsh_recording.agent()
        first = await agent.run_turn("Remember: the codeword is ZINNIA. Reply OK.")
        spawned = await agent.spawn()
        child = await spawned.run_turn("Say CHILD_OK.")
        forked = await agent.fork()
        recalled = await forked.run_turn("What is the codeword?")
        last = await agent.run_turn("Say PARENT_DONE.")
        return [first.text, child.text, recalled.text, last.text]

    assert asyncio.run(go()) == ["OK", "CHILD_OK", "ZINNIA", "PARENT_DONE"]
"""


def _library_children(req: RecordedRequest) -> Response:
    text = next(
        (m["content"] for m in reversed(req.messages) if m.get("role") == "user"
         and not str(m.get("content", "")).startswith("Current runtime context")),
        "",
    )  # fmt: skip
    for ask, answer in (("CHILD_OK", "CHILD_OK"), ("codeword?", "ZINNIA"), ("PARENT_DONE", "PARENT_DONE")):
        if ask in str(text):
            return reply(answer)
    return reply("OK")


def test_library_children_record_as_children_and_replay_keylessly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``agent.spawn()`` / ``agent.fork()`` in a test: each child is recorded as
    ``session.N.jsonl`` and bound to its parent in the keyless rerun."""
    pytester.makepyfile(test_user=LIBRARY_CHILDREN_TEST)
    scenario = Path(pytester.path) / "recordings" / "children"
    with OpenAICompatServer(handler=_library_children) as server:
        recorded = _run(pytester, monkeypatch, {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url},
                        "--dsh-snapshot=record")  # fmt: skip
        assert len(server.requests) == 4
    recorded.assert_outcomes(passed=1)
    assert sorted(p.name for p in scenario.glob("session*.jsonl")) == [
        "session.1.jsonl", "session.2.jsonl", "session.jsonl"
    ]  # fmt: skip
    replayed = _run(pytester, monkeypatch, {})  # no key, server stopped
    replayed.assert_outcomes(passed=1)


SPAWN_ONLY_TEST = """
import asyncio

import pytest


@pytest.mark.dsh_scenario("recordings/spawn-only")
def test_spawn_only(dsh_recording):
    async def go():
        agent = await dsh_recording.agent()
        spawned = await agent.spawn()
        return (await spawned.run_turn("Say CHILD_OK.")).text

    assert asyncio.run(go()) == "CHILD_OK"
"""


def test_a_spawned_child_replays_with_the_recorded_model(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child made with ``agent.spawn()`` whose parent never asked the model is recorded with
    a model that is not the default one: the keyless rerun asks with that model, not
    ``deepseek-chat`` (which would diverge on the model config)."""
    pytester.makepyfile(test_user=SPAWN_ONLY_TEST)
    live = {"DSH_API_KEY": "sk-test", "DSH_MODEL": "custom-model-7"}
    with OpenAICompatServer(handler=_library_children) as server:
        recorded = _run(
            pytester, monkeypatch, {**live, "DSH_BASE_URL": server.base_url}, "--dsh-snapshot=record"
        )
        assert [r.json["model"] for r in server.requests] == ["custom-model-7"]
    recorded.assert_outcomes(passed=1)
    replayed = _run(pytester, monkeypatch, {})  # no key, no model setting, server stopped
    replayed.assert_outcomes(passed=1)


def _dsh_replay(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**_env(), "NO_COLOR": "1", "PYTHONUTF8": "1"}
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", "replay", str(directory), *args],
        env=env, capture_output=True, text=True, timeout=60, cwd=directory.parent,
    )  # fmt: skip


def test_the_cli_replays_what_the_fixture_recorded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dsh replay recordings/X`` on a fixture's recording (an ``input.json`` holding only the
    redaction salt, no ``steps``; with ``--dsh-no-redact`` no ``input.json`` at all): the prompts
    come from the recorded logs, children started from code included."""
    pytester.makepyfile(test_user=LIBRARY_CHILDREN_TEST)
    scenario = Path(pytester.path) / "recordings" / "children"
    with OpenAICompatServer(handler=_library_children) as server:
        live = {"DSH_API_KEY": "sk-test", "DSH_BASE_URL": server.base_url}
        _run(pytester, monkeypatch, live, "--dsh-snapshot=record").assert_outcomes(passed=1)
    assert "steps" not in json.loads((scenario / "input.json").read_text())
    out = _dsh_replay(scenario, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] is True, report
    assert [s["finalText"] for s in report["sessions"]] == ["PARENT_DONE", "CHILD_OK", "ZINNIA"]
    (scenario / "input.json").unlink()  # what --dsh-no-redact leaves
    out = _dsh_replay(scenario)
    assert out.returncode == 0, out.stderr
    assert "replay ok" in out.stdout
    shown = out.stdout.split("\n✓")[0]  # the live view: each prompt, the children's too, then its answer
    assert shown.split("\n\n") == [
        "› Remember: the codeword is ZINNIA. Reply OK.\nOK",
        "› Say CHILD_OK.\nCHILD_OK",
        "› What is the codeword?\nZINNIA",
        "› Say PARENT_DONE.\nPARENT_DONE",
    ], out.stdout

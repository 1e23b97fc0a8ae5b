"""The dsh_serve fixture, run in a pytester project: replay by default, record on request;
registered by the package's ``pytest11`` entry point (no ``pytest_plugins`` line needed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.serve.helpers import SCENARIOS, recorded_calls

LEGACY_CONFTEST = 'pytest_plugins = ["dsh.serve.pytest_plugin"]\n'
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

REPLAY_TEST = """
import json, pathlib
import openai
import pytest

BODIES = json.loads(pathlib.Path(__file__).with_name("bodies.json").read_text())

@pytest.mark.dsh_serve(directory=str(pathlib.Path(__file__).with_name("rec")))
def test_it(dsh_serve):
    with openai.OpenAI(base_url=dsh_serve, api_key="unused", max_retries=0) as client:
        for body in BODIES[:{calls}]:
            list(client.chat.completions.create(**body, stream=True))
"""


def _project(pytester: pytest.Pytester, bodies: list[dict[str, object]], calls: int) -> None:
    shutil.copytree(SCENARIOS / "tool-call-turn", pytester.path / "rec")
    pytester.makeini(INI)
    (pytester.path / "bodies.json").write_text(json.dumps(bodies))
    pytester.makepyfile(test_app=REPLAY_TEST.replace("{calls}", str(calls)))


def test_a_fully_consumed_replay_passes(pytester: pytest.Pytester) -> None:
    _project(pytester, [body for body, _ in recorded_calls(SCENARIOS / "tool-call-turn")], 2)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_an_unconsumed_script_fails_the_test(pytester: pytest.Pytester) -> None:
    _project(pytester, [body for body, _ in recorded_calls(SCENARIOS / "tool-call-turn")], 1)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*recorded calls not served in session.jsonl*"])


def test_a_409_fails_the_test_even_if_the_client_swallows_it(pytester: pytest.Pytester) -> None:
    bodies = [body for body, _ in recorded_calls(SCENARIOS / "tool-call-turn")]
    bodies[0]["messages"][-1]["content"] = "something else"
    _project(pytester, bodies, 2)
    pytester.makepyfile(
        test_app="""
import json, pathlib
import openai
import pytest

BODIES = json.loads(pathlib.Path(__file__).with_name("bodies.json").read_text())

@pytest.mark.dsh_serve(directory=str(pathlib.Path(__file__).with_name("rec")))
def test_it(dsh_serve):
    with openai.OpenAI(base_url=dsh_serve, api_key="unused", max_retries=0) as client:
        try:
            client.chat.completions.create(**BODIES[0])
        except openai.ConflictError:
            pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*1 request(s) refused with 409*", "*diverged at call 1*", "*+    something else*"]
    )


def test_record_then_replay(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(
        test_app="""
import openai

def test_hello(dsh_serve):
    with openai.OpenAI(base_url=dsh_serve, api_key="sk-fixture", max_retries=0) as client:
        chunks = list(client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello"
"""
    )
    with OpenAICompatServer(handler=lambda _: stream_reply(text=["Hel", "lo"])) as upstream:
        pytester.runpytest("-p", "no:cacheprovider", "--dsh-snapshot=record").assert_outcomes(skipped=1)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DSH_SERVE_UPSTREAM", upstream.base_url)
            pytester.runpytest("-p", "no:cacheprovider", "--dsh-snapshot=record").assert_outcomes(passed=1)
    recording = pytester.path / "recordings" / "test_hello"
    assert (recording / "session.jsonl").exists()
    assert b"sk-fixture" not in (recording / "session.jsonl").read_bytes()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_recording_again_replaces_the_whole_recording(pytester: pytest.Pytester) -> None:
    test_record_then_replay(pytester)
    recording = pytester.path / "recordings" / "test_hello"
    stale = recording / "session.1.jsonl"  # an earlier recording had a second session
    shutil.copy(recording / "session.jsonl", stale)
    with (
        OpenAICompatServer(handler=lambda _: stream_reply(text=["Hel", "lo"])) as upstream,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("DSH_SERVE_UPSTREAM", upstream.base_url)
        pytester.runpytest("-p", "no:cacheprovider", "--dsh-snapshot=record").assert_outcomes(passed=1)
    assert not stale.exists() and (recording / "session.jsonl").exists()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def _run_pytest(project: Path) -> subprocess.CompletedProcess[str]:
    """``python -m pytest`` in ``project`` as a user runs it (its own ini, no conftest)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("conftest", [None, LEGACY_CONFTEST], ids=["no-conftest", "legacy-line"])
def test_the_fixture_is_registered_by_the_entry_point(tmp_path: Path, conftest: str | None) -> None:
    bodies = [body for body, _ in recorded_calls(SCENARIOS / "tool-call-turn")]
    shutil.copytree(SCENARIOS / "tool-call-turn", tmp_path / "rec")
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "bodies.json").write_text(json.dumps(bodies))
    (tmp_path / "test_app.py").write_text(REPLAY_TEST.replace("{calls}", "2"))
    if conftest is not None:  # the line older docs asked for must stay harmless
        (tmp_path / "conftest.py").write_text(conftest)
    done = _run_pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    if conftest is None:  # and it still fails a test that leaves a recorded call unserved
        (tmp_path / "test_app.py").write_text(REPLAY_TEST.replace("{calls}", "1"))
        done = _run_pytest(tmp_path)
        assert done.returncode == 1 and "recorded calls not served in session.jsonl" in done.stdout


CLIENT_TEST = """
import openai

def test_hello(dsh_serve_client):
    http = dsh_serve_client.http_client()
    with openai.OpenAI(api_key="sk-fixture", max_retries=0, http_client=http) as client:
        chunks = list(client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "{prompt}"}], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello"
    if not dsh_serve_client.record:  # replayed in-process: no HTTP server was started
        assert not dsh_serve_client.server.http.started
"""


def test_the_client_fixture_records_via_the_proxy_and_replays_in_process(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_app=CLIENT_TEST.replace("{prompt}", "hi"))
    with (
        OpenAICompatServer(handler=lambda _: stream_reply(text=["Hel", "lo"])) as upstream,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("DSH_SERVE_UPSTREAM", upstream.base_url)
        pytester.runpytest("-p", "no:cacheprovider", "--dsh-snapshot=record").assert_outcomes(passed=1)
        assert len(upstream.requests) == 1
    recording = pytester.path / "recordings" / "test_hello"
    assert b"sk-fixture" not in (recording / "session.jsonl").read_bytes()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.makepyfile(test_app=CLIENT_TEST.replace("{prompt}", "something else"))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, errors=1)  # the client sees the 409; teardown reports it too
    result.stdout.fnmatch_lines(["*409*diverged at call 1*"])

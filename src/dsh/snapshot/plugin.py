"""The pytest plugin: every scenario directory under ``dsh_snapshot_paths`` is a test item.

Registered through the ``pytest11`` entry point. A scenario directory is one holding an
``input.json``; its item is named after the directory, so ``pytest -k subagent-fork`` works.
The mode comes from ``--dsh-snapshot`` or ``DSH_SNAPSHOT`` (replay, record, refresh). A
project plugs in its own agent with the ini option ``dsh_snapshot_factory =
package.module:function`` (an async ``AgentSetup -> Agent`` callable).

Registered for every pytest run wherever dsh is installed, so the module imports only
pytest and the scenario file names; the runner is imported when a scenario runs.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from dsh.errors import DshError, StopRunError
from dsh.replay.layout import INPUT

if TYPE_CHECKING:
    from dsh.snapshot.fixture import Recording
    from dsh.snapshot.redaction import RedactOptions
    from dsh.snapshot.runner import AgentFactory


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dsh-snapshot", "dsh recorded scenarios")
    group.addoption(
        "--dsh-snapshot",
        action="store",
        default=None,
        choices=("replay", "once", "record", "refresh"),
        help="Scenario mode: replay (keyless), once (record a scenario that has no recording), "
        "record, refresh (default: $DSH_SNAPSHOT or replay).",
    )
    group.addoption(
        "--dsh-drift",
        action="store",
        default=None,
        choices=("strict", "warn"),
        help="warn: report where a replay diverges from its recording without failing "
        "(default: $DSH_DRIFT or strict).",
    )
    group.addoption(
        "--dsh-cache",
        action="store",
        default="fail",
        choices=("fail", "warn", "off"),
        help="A scenario request that rewrites its prompt-cache prefix (replay: unless input.json "
        "accepts it; record: where the committed recording did not): fail (default), warn, off.",
    )
    group.addoption(
        "--dsh-no-redact",
        action="store_true",
        default=False,
        help="Debugging only: record secrets verbatim (no redaction, no scan after the record).",
    )
    parser.addini(
        "dsh_redact",
        type="linelist",
        default=[],
        help="Regexes whose matches a record redacts besides the built-in secrets (kept in input.json).",
    )
    group.addoption(
        "--dsh-until",
        action="store",
        type=int,
        default=None,
        metavar="TURN",
        help="Continue each scenario live from its turn TURN: the recorded turns up to TURN kept "
        "keylessly (a branch by reference), the later prompts asked of the configured provider "
        "(DSH_BASE_URL, DEEPSEEK_API_KEY or DSH_API_KEY, DSH_MODEL); the branch is stored in "
        "$DSH_STORE (else a temporary store) and where its answers diverge is reported.",
    )
    group.addoption(
        "--dsh-live-mcp",
        action="store_true",
        default=False,
        help="Replay scenarios with their MCP servers running (the workspace's .mcp.json) "
        "instead of serving the recorded MCP results.",
    )
    parser.addini(
        "dsh_snapshot_paths",
        type="paths",
        default=[],
        help="Directories holding scenario directories (default: tests/snapshots).",
    )
    parser.addini(
        "dsh_snapshot_trust",
        type="bool",
        default=False,
        help="Trust the scenarios: do not list the recorded bash commands replay runs on this machine.",
    )
    parser.addini(
        "dsh_snapshot_factory",
        default="",
        help="module:function building the agent for a scenario (default: dsh's standard agent).",
    )


def redaction_options(config: pytest.Config) -> RedactOptions:
    """How a record under pytest redacts: ``--dsh-no-redact`` and the ini ``dsh_redact``
    (this plugin's options; its defaults when it is disabled). Also the ``dsh_serve`` fixture's."""
    from dsh.snapshot.redaction import NO_REDACT_WARNING, RedactOptions

    try:
        enabled = not config.getoption("--dsh-no-redact")
        custom = tuple(config.getini("dsh_redact"))
    except (ValueError, KeyError):  # the plugin is disabled (-p no:dsh_snapshot)
        enabled, custom = True, ()
    if not enabled:
        sys.stderr.write(f"dsh: WARNING: {NO_REDACT_WARNING}\n")
    return RedactOptions(custom, enabled=enabled)


def _check_clean(directory: Path, changed: list[str], redact: RedactOptions) -> None:
    """After a record: the scan over what it wrote; a finding fails the record."""
    from dsh.snapshot.redaction import secrets_left

    left = secrets_left(directory, changed, redact)
    if left:
        raise ScenarioFailed(
            f"scenario {directory.name}: the recording still holds secrets (redact them with "
            "dsh_redact or replay.redact, then record again):\n" + "\n".join(left)
        )


_DRIFTED = pytest.StashKey[list[str]]()
_CHANGED = pytest.StashKey[list[str]]()
_OUTCOME = pytest.StashKey[bool]()
_NOTED = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "dsh_scenario(path): bind the dsh_recording fixture to a scenario directory "
        "(relative to the test file)",
    )


_DSH_SOURCES = Path(__file__).resolve().parent.parent


def _without_dsh_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback chain ``tb`` with dsh's own frames left out (the caller's kept)."""
    kept: list[TracebackType] = []
    while tb is not None:
        if not Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(_DSH_SOURCES):
            kept.append(tb)
        tb = tb.tb_next
    head: TracebackType | None = None
    for entry in reversed(kept):
        head = TracebackType(head, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return head


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    excinfo = call.excinfo
    if excinfo is not None and isinstance(excinfo.value, StopRunError):
        # A divergence or a failed record raised at the test's own call: show the test's
        # frames down to that call and the message (reason, diff, what to do), not dsh's.
        kept = _without_dsh_frames(excinfo.tb)
        if kept is not None:
            excinfo.traceback = type(excinfo.traceback)(kept)
    report = yield
    if call.when == "call":
        item.stash[_OUTCOME] = bool(getattr(report, "passed", False))
    return report


@pytest.fixture
def dsh_recording(request: pytest.FixtureRequest) -> Iterator[Recording]:
    """The scenario named by ``@pytest.mark.dsh_scenario(path)``, as a model and agents.

    Replay (default): keyless, and the test fails if a recorded call was not consumed or a
    request diverged. ``--dsh-snapshot=record`` (or ``once`` without a recording): the
    configured provider, and the sessions the test ran become the scenario's logs.
    """
    from dsh.snapshot.fixture import Recording
    from dsh.snapshot.runner import ScenarioSkipped, drift_mode, snapshot_mode

    marker = request.node.get_closest_marker("dsh_scenario")
    if marker is None or not marker.args:
        raise pytest.UsageError("dsh_recording needs @pytest.mark.dsh_scenario('path/to/scenario')")
    path = Path(str(marker.args[0]))
    if not path.is_absolute():
        path = request.path.parent / path
    config = request.config
    mode = snapshot_mode(config.getoption("--dsh-snapshot"))
    try:
        redact = redaction_options(config)
        recording = Recording(path, mode, drift=drift_mode(config.getoption("--dsh-drift")), redact=redact)
    except ScenarioSkipped as exc:
        pytest.skip(str(exc))
    yield recording
    passed = request.node.stash.get(_OUTCOME, False)
    changed = asyncio.run(recording.finish(passed=passed))
    _check_clean(path, changed, redact)
    if changed:
        config.stash.setdefault(_CHANGED, []).append(f"{path}: {', '.join(changed)}")


_UNTRUSTED = pytest.StashKey[list[str]]()
_LIVE = pytest.StashKey[list[str]]()
_LIVE_STORE = pytest.StashKey[str]()


def _live_store(config: pytest.Config) -> str:
    """Where ``--dsh-until`` stores its branches: ``$DSH_STORE``, else one temporary SQLite
    store for the whole run (named in the summary)."""
    import os
    import tempfile

    if _LIVE_STORE not in config.stash:
        given = os.environ.get("DSH_STORE", "").strip()
        if not given:
            given = f"sqlite:{Path(tempfile.mkdtemp(prefix='dsh-live-')) / 'sessions.db'}"
        config.stash[_LIVE_STORE] = given
    return config.stash[_LIVE_STORE]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """One section per kind of note the run kept: recordings written, recorded commands run,
    tolerated divergences, scenarios continued live, cache and id notes."""
    sections = (
        (_CHANGED, "dsh: recordings written"),
        (_UNTRUSTED, "dsh: recorded commands replay ran (ini dsh_snapshot_trust = true hides this)"),
        (_DRIFTED, "dsh: tolerated divergences from the recordings"),
        (_LIVE, "dsh: scenarios continued live (--dsh-until)"),
        (_NOTED, "dsh: notes (--dsh-cache=warn, recorded ids)"),
    )
    for key, title in sections:
        lines = config.stash.get(key, [])
        if lines:
            terminalreporter.section(title)
            for line in lines:
                terminalreporter.line(line)


def _roots(config: pytest.Config) -> list[Path]:
    configured: list[Path] = config.getini("dsh_snapshot_paths")
    return [p.resolve() for p in configured] or [(config.rootpath / "tests" / "snapshots").resolve()]


def _factory(config: pytest.Config) -> AgentFactory:
    from dsh.snapshot.factory import load_factory
    from dsh.snapshot.runner import default_agent_factory

    spec = str(config.getini("dsh_snapshot_factory")).strip()
    if not spec:
        return default_agent_factory
    try:
        return load_factory(spec, root=config.rootpath)
    except DshError as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name != INPUT:
        return None
    scenario = file_path.parent.resolve()
    if not any(scenario.parent == root for root in _roots(parent.config)):
        return None
    collector: pytest.Collector = ScenarioFile.from_parent(parent, path=file_path)
    return collector


class ScenarioFile(pytest.File):
    """The ``input.json`` of one scenario; yields that scenario's single item."""

    def collect(self) -> Iterator[pytest.Item]:
        yield ScenarioItem.from_parent(self, name=self.path.parent.name)


class ScenarioItem(pytest.Item):
    """Runs one scenario in the configured mode."""

    def runtest(self) -> None:
        until = self.config.getoption("--dsh-until")
        if until is not None:
            self._continue_live(int(until))
            return
        self._run()

    def _continue_live(self, until: int) -> None:
        """``--dsh-until``: the recording's turns up to ``until``, then the provider's."""
        from dsh.loop import Feed
        from dsh.model.settings import resolve_provider
        from dsh.snapshot.live import continue_live
        from dsh.store.url import open_store

        settings = resolve_provider(key_option=None)
        url = _live_store(self.config)

        async def body() -> str:
            store = open_store(url)
            try:
                run = await continue_live(self.path.parent, store, until, settings, Feed())
            finally:
                await store.close()
            d = run.divergence
            said = (
                "the live answers match the recorded ones"
                if d is None
                else (f"diverged at turn {d.turn}: recorded {d.recorded!r}, live {d.live!r}")
            )
            return (
                f"{self.name}: turns 1–{until} recorded, {run.turns[0]}–{run.turns[-1]} live with "
                f"{settings.model} -> branch {run.branch} in {url}; {said}"
            )

        self.config.stash.setdefault(_LIVE, []).append(asyncio.run(body()))

    def _run(self) -> None:
        from dsh.replay.permissions import untrusted_warning
        from dsh.snapshot.cache_check import cache_check
        from dsh.snapshot.runner import ScenarioSkipped, drift_mode, run_scenario, snapshot_mode

        mode = snapshot_mode(self.config.getoption("--dsh-snapshot"))
        drift = drift_mode(self.config.getoption("--dsh-drift"))
        if mode != "record" and not self.config.getini("dsh_snapshot_trust"):
            warning = untrusted_warning(self.path.parent)
            if warning:
                self.config.stash.setdefault(_UNTRUSTED, []).append(warning)
        redact = redaction_options(self.config)
        try:
            result = asyncio.run(
                run_scenario(
                    self.path.parent,
                    mode,
                    factory=_factory(self.config),
                    drift=drift,
                    redact=redact,
                    live_mcp=bool(self.config.getoption("--dsh-live-mcp")),
                    cache=cache_check(str(self.config.getoption("--dsh-cache"))),
                )
            )
        except ScenarioSkipped as exc:
            pytest.skip(str(exc))
        if not result.ok:
            raise ScenarioFailed(result.failure_text())
        if result.notes:
            self.config.stash.setdefault(_NOTED, []).extend(result.notes)
        if result.mode == "record":
            _check_clean(self.path.parent, result.changed, redact)
        if result.changed:
            self.config.stash.setdefault(_CHANGED, []).append(
                f"{result.scenario}: {', '.join(result.changed)}"
            )
        drifted = self.config.stash.setdefault(_DRIFTED, [])
        for report in result.sessions:
            for tolerated in report.tolerated:
                drifted.append(
                    f"{tolerated.headline(result.scenario)} (tolerated by {tolerated.tolerated_by})"
                )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed | DshError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self.name}"


class ScenarioFailed(AssertionError):
    """A scenario's replay did not match (the message holds the diff or the problems)."""

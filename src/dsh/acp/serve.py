"""Serving ACP: build the runtime from options, run one connection over stdio until EOF, tear down."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from acp.core import AgentSideConnection
from acp.interfaces import Agent

from dsh.acp.auth import PendingKeyModels
from dsh.acp.runtime import LiveModels, ModelSource, ReplayModels, Runtime
from dsh.acp.server import DshAcpAgent
from dsh.acp.transport import LineTransport, open_reader, open_sink, protected_stdio
from dsh.acp.updates import DEFAULT_CONTEXT_WINDOW, PROFILES, Profile
from dsh.errors import MissingCredentialError, UsageError
from dsh.model.settings import DEFAULT_MODEL, model_name, resolve_provider
from dsh.replay.fidelity import Drift
from dsh.store.url import open_store
from dsh.subagents import live_tools
from dsh.tools.sandbox import SandboxPolicy

log = logging.getLogger("dsh.acp")


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """``dsh acp``'s options; ``replay`` serves a recorded scenario instead of a live model."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    store: str | None = None
    replay: Path | None = None
    profile: Profile = "full"
    log_file: Path | None = None
    context_window: int = DEFAULT_CONTEXT_WINDOW
    trust: bool = False
    """Replay only: do not log a warning naming the recording's bash commands."""
    drift: Drift = "strict"
    """Replay only: ``warn`` serves on where a request diverges from the recording."""
    sandbox: SandboxPolicy | None = None
    """Live only: every session's file policy (``dsh acp`` passes ``workspace-write`` unless
    ``--sandbox`` says otherwise); a replay runs under the recording's."""
    background_wait: float = 30.0
    """At shutdown (stdin EOF, SIGTERM): how long background subagents may still finish."""


def build_runtime(options: ServeOptions) -> Runtime:
    """Check every option and build the runtime without serving (no network I/O).

    Raises :class:`~dsh.errors.UsageError` (bad store URL, bad profile; a missing key is not
    one: the server starts and asks for it, :mod:`dsh.acp.auth`) and
    the replay errors of a malformed scenario directory, so the CLI can exit before serving.
    """
    if options.profile not in PROFILES:
        raise UsageError(f"unknown profile {options.profile!r} (use one of {', '.join(PROFILES)})")
    if options.model is not None and not options.model.strip():
        raise UsageError("--model must not be empty")
    models: ModelSource
    if options.replay is not None:
        replay = ReplayModels(options.replay.resolve(), trust=options.trust, drift=options.drift)
        replay.check()
        models, name = replay, options.model or replay.recorded_model or DEFAULT_MODEL
    else:
        try:
            settings = resolve_provider(
                api_key=options.api_key, base_url=options.base_url, model=options.model
            )
        except MissingCredentialError:  # serve anyway: sessions answer auth_required (dsh.acp.auth)
            models, name = (
                PendingKeyModels(base_url=options.base_url, model=options.model),
                model_name(options.model),
            )
        else:
            name = settings.model
            models = LiveModels(settings.open_model())  # the key scrubbed out of /proc/<dsh>/environ
    store = open_store(options.store)
    tools = models.tools if isinstance(models, ReplayModels) else live_tools
    return Runtime(
        store=store,
        models=models,
        model_name=name,
        profile=options.profile,
        context_window=options.context_window,
        sandbox=options.sandbox,
        background_wait=options.background_wait,
        tools=tools,
    )


def configure_logging(log_file: Path | None) -> None:
    """Log to ``log_file`` at INFO, or nowhere; warnings are logged, never printed."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if log_file is None:
        root.addHandler(logging.NullHandler())
        root.setLevel(logging.CRITICAL)
    else:
        handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
    logging.captureWarnings(True)


async def serve_connection(runtime: Runtime, transport: LineTransport) -> None:
    """Serve one ACP connection until the client closes its end (or SIGTERM/SIGINT)."""
    agent = DshAcpAgent(runtime)
    # Deliberately not a full ``acp.Agent``: the methods it lacks answer -32601.
    # session/fork is in the SDK's unstable protocol: routed only when that is on.
    conn = AgentSideConnection(cast("Agent", agent), transport, listening=False, use_unstable_protocol=True)
    loop = asyncio.get_running_loop()
    listen = loop.create_task(conn.listen(), name="dsh-acp-listen")
    stops: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, listen.cancel)
            stops.append(sig)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await listen
        log.info("client closed the connection; shutting down")
    finally:
        for sig in stops:
            loop.remove_signal_handler(sig)
        try:
            await agent.shutdown()
        finally:
            await conn.close()
            await runtime.aclose()


async def serve_stdio(runtime: Runtime, log_file: Path | None = None) -> None:
    """Serve on this process's stdin/stdout; stdout carries protocol frames only."""
    with protected_stdio(log_file) as fds:
        configure_logging(log_file)
        reader = await open_reader(fds.stdin)
        sink = await open_sink(fds.stdout_fd)
        transport = LineTransport(reader, sink)
        try:
            await serve_connection(runtime, transport)
        finally:
            await transport.close()

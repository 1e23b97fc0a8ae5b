"""The options ``dsh run`` and ``dsh chat`` share, and the one place they are checked."""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from dsh.errors import ToolError, UsageError
from dsh.tools.sandbox import DEFAULT_MODE, SANDBOX_MODES, SandboxMode, SandboxPolicy, chosen_backend

if TYPE_CHECKING:
    from dsh.cli.live import LiveSetup

CwdOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd",
        help="Workspace the tools work in (default: the current directory; a resumed session "
        "keeps its own, and a different --cwd is refused).",
        show_default=False,
    ),
]
ResumeOption = Annotated[
    str | None,
    typer.Option(
        "--resume",
        "-r",
        metavar="ID",
        help="Continue this stored session (a unique prefix works).",
        show_default=False,
    ),
]
ContinueOption = Annotated[
    bool,
    typer.Option(
        "--continue", "-c", help="Continue the most recently active top-level session of this workspace."
    ),
]
WaitOption = Annotated[
    float | None,
    typer.Option(
        "--wait",
        metavar="SECONDS",
        min=0.0,
        help="When resuming: wait up to SECONDS for another writer of the session to finish "
        "(default: fail at once if the session is busy).",
        show_default=False,
    ),
]
BackgroundWaitOption = Annotated[
    str | None,
    typer.Option(
        "--background-wait",
        envvar="DSH_BACKGROUND_WAIT",
        metavar="SECONDS",
        help="At exit, wait up to SECONDS for background subagents still running, then stop "
        "them (their turns end aborted; default: 30).",
        show_default=False,
    ),
]
DEFAULT_BACKGROUND_WAIT = 30.0
SandboxOption = Annotated[
    str,
    typer.Option(
        "--sandbox",
        envvar="DSH_SANDBOX",
        metavar="MODE",
        help="File policy: read-only, workspace-write (bash confined by bubblewrap, writes only "
        "in the workspace and temp dirs) or danger-full-access (nothing confined).",
    ),
]
NetworkOption = Annotated[
    str,
    typer.Option(
        "--network",
        envvar="DSH_NETWORK",
        metavar="on|off",
        help="Whether confined commands may use the network.",
    ),
]
ApproveOption = Annotated[
    bool, typer.Option("--approve", help="Allow every approval request once (sandbox escalations).")
]
DenyOption = Annotated[bool, typer.Option("--deny", help="Reject every approval request.")]
SystemOption = Annotated[
    str | None,
    typer.Option(
        "--system",
        "-s",
        metavar="TEXT|@FILE",
        help="The system prompt, or @FILE to read it from a file (default: dsh's own).",
        show_default=False,
    ),
]
ToolsOption = Annotated[
    str | None,
    typer.Option(
        "--tools",
        metavar="NAMES",
        help="Offer only these tools, comma-separated (e.g. read,glob,bash); default: all.",
        show_default=False,
    ),
]
McpConfigOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--mcp-config",
        metavar="FILE",
        help="MCP servers to offer, in .mcp.json's format (repeatable; added to the workspace's "
        ".mcp.json, a later server of the same name wins).",
        show_default=False,
    ),
]
TrustMcpOption = Annotated[
    bool,
    typer.Option(
        "--trust-mcp",
        envvar="DSH_TRUST_MCP",
        help="Start the workspace's .mcp.json servers without asking (default: asked once per "
        "file at a terminal; without one they do not start).",
    ),
]
NoToolsOption = Annotated[bool, typer.Option("--no-tools", help="Offer the model no tools at all.")]
MaxStepsOption = Annotated[
    int | None,
    typer.Option(
        "--max-steps",
        metavar="N",
        min=1,
        help="Stop a turn after N model calls (default: 200).",
        show_default=False,
    ),
]
ContextWindowOption = Annotated[
    int | None,
    typer.Option(
        "--context-window",
        envvar="DSH_CONTEXT_WINDOW",
        metavar="TOKENS",
        min=1,
        help="The model's context window: a request past 80% of it compacts the conversation's "
        "head into a summary first (default: the model's known window, else what the session "
        "logged; unknown: only a context overflow compacts).",
        show_default=False,
    ),
]


def system_prompt(value: str | None) -> str | None:
    """``--system``: the text itself, or the contents of ``@FILE``."""
    if value is None or not value.startswith("@"):
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--system {value}: {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--system {value}: cannot read {path}: {exc}") from None


def tool_names(tools: str | None, no_tools: bool) -> tuple[str, ...] | None:
    """``--tools`` / ``--no-tools`` as the names to offer (``None``: all of them)."""
    if no_tools and tools is not None:
        raise UsageError("--tools and --no-tools exclude each other")
    if no_tools:
        return ()
    if tools is None:
        return None
    names = tuple(n.strip() for n in tools.split(",") if n.strip())
    if not names:
        raise UsageError("--tools needs at least one name (or use --no-tools)")
    return names


def background_wait(value: str | None) -> float:
    """``--background-wait SECONDS`` (or ``$DSH_BACKGROUND_WAIT``): seconds >= 0, else a ``UsageError``."""
    if value is None:
        return DEFAULT_BACKGROUND_WAIT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        given = _given("--background-wait", "DSH_BACKGROUND_WAIT", value)
        raise UsageError(f"{given}: expected a number of seconds (0 or more)")
    return seconds


def live_setup(
    *,
    store: str | None,
    cwd: Path | None,
    resume: str | None,
    continue_last: bool,
    wait: float | None,
    sandbox: str,
    network: str,
    approve: bool,
    deny: bool,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    system: str | None,
    tools: str | None,
    no_tools: bool,
    max_steps: int | None,
    context_window: int | None,
    background: str | None,
    mcp_config: list[Path] | None,
    trust_mcp: bool,
) -> LiveSetup:
    """Every shared option checked (``UsageError`` naming the option) and gathered."""
    from dsh.cli.approve import approver_for
    from dsh.cli.live import LiveSetup
    from dsh.cli.mcp_trust import trust_asker
    from dsh.hooks import user_hooks_dir
    from dsh.mcp.trust import session_servers

    workspace = (cwd or Path.cwd()).resolve()
    if not workspace.is_dir():
        raise UsageError(f"--cwd {workspace}: not a directory")
    if resume is not None and continue_last:
        raise UsageError("--resume and --continue exclude each other")
    if wait is not None and resume is None and not continue_last:
        raise UsageError("--wait SECONDS needs --resume ID or --continue")
    policy = sandbox_policy(sandbox, network)
    if approve and deny:
        raise UsageError("--approve and --deny exclude each other")
    return LiveSetup(
        store_url=store,
        workspace=workspace,
        cwd_given=cwd is not None,
        resume=resume,
        continue_last=continue_last,
        wait=wait or 0.0,
        sandbox=policy,
        approver=approver_for(approve, deny),
        model=model,
        base_url=base_url,
        api_key=api_key,
        system=system_prompt(system),
        tools=tool_names(tools, no_tools),
        max_steps=max_steps,
        context_window=context_window,
        background_wait=background_wait(background),
        mcp_servers=session_servers(
            workspace,
            tuple(mcp_config or ()),
            trusted=trust_mcp,
            ask=trust_asker(),
            home=user_hooks_dir(),
            notice=lambda line: typer.echo(line, err=True),
        ),
    )


DEFAULT_SANDBOX = DEFAULT_MODE


def _given(option: str, envvar: str, value: str) -> str:
    """How ``value`` was given: ``$ENVVAR=value`` when the environment holds it, else ``--option value``."""
    return f"${envvar}={value}" if os.environ.get(envvar) == value else f"{option} {value}"


def sandbox_policy(sandbox: str, network: str) -> SandboxPolicy:
    """The policy ``--sandbox MODE --network on|off`` (or ``$DSH_SANDBOX`` / ``$DSH_NETWORK``) name.

    A bad value is a ``UsageError`` naming the option or the environment variable it came from.
    """
    if sandbox not in SANDBOX_MODES:
        given = _given("--sandbox", "DSH_SANDBOX", sandbox)
        raise UsageError(f"{given}: expected one of {', '.join(SANDBOX_MODES)}")
    if network not in ("on", "off"):
        raise UsageError(f"{_given('--network', 'DSH_NETWORK', network)}: expected on or off")
    policy = SandboxPolicy(mode=cast(SandboxMode, sandbox), network=network == "on")
    try:
        chosen_backend(policy)  # $DSH_SANDBOX_BACKEND is checked here, before anything runs
    except ToolError as exc:
        raise UsageError(str(exc)) from None
    return policy


SETUP_PARAMETERS = tuple(inspect.signature(live_setup).parameters)
"""The parameter names ``run`` and ``chat`` share with :func:`live_setup`."""


def setup_from(params: Mapping[str, Any]) -> LiveSetup:
    """:func:`live_setup` over a command's parameters (``locals()`` of ``run`` / ``chat``)."""
    return live_setup(**{name: params[name] for name in SETUP_PARAMETERS})

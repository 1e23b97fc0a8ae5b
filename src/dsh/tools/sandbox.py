"""The session file policy, the write fence of the file tools, and the kernel sandbox of ``bash``.

Three modes, the original's: ``read-only``, ``workspace-write`` and ``danger-full-access``.
A :class:`SandboxPolicy` reaches a tool through ``ToolContext.sandbox`` (``None``: no
policy at all, the behaviour before sandboxing — replays and the recorded scenarios).

- ``write``/``edit`` call :func:`check_file_write`: ``read-only`` refuses every write,
  ``workspace-write`` refuses a real path outside the writable roots (the workspace, ``/tmp``
  and the OS temp dir), or beneath one of their :data:`PROTECTED_NAMES` (``.git``, ``.dsh``,
  the hook files), with the original's ``FS_SANDBOX_DENIED`` text.
- ``bash`` calls :func:`confine` to get the argv that runs its command under
  bubblewrap (``bwrap``): the whole file system read-only, the writable roots bound
  read-write but their protected entries bound read-only again, the secrets paths of
  :data:`SECRET_PATHS` hidden, new user and PID namespaces (nothing outlives the call),
  every capability dropped (uid 65534 inside when dsh is root), and no network unless the
  policy allows it. Where ``bwrap`` cannot
  build a sandbox (missing, or no user namespaces, as in most containers) the Landlock
  runner (:mod:`dsh.tools.landlock`) confines it instead, as the original does: the same
  writable roots, the hidden paths unreadable, TCP refused without network — and says so
  once per process (a ``dsh.sandbox`` warning) unless Landlock was chosen. When neither
  can, :func:`confine` raises the original's ``SANDBOX_UNAVAILABLE`` refusal instead of
  running the command unconfined. A runner named explicitly (``SandboxPolicy.runner``,
  ``$DSH_BWRAP``) or ``SandboxPolicy.backend`` decides the backend without a fallback.
  ``danger-full-access`` runs unwrapped.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, cast, get_args

from dsh.errors import ToolError
from dsh.tools.codes import tool_error
from dsh.tools.landlock import landlock_argv, landlock_failure

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
SandboxBackend = Literal["auto", "bubblewrap", "landlock"]
SANDBOX_MODES: Final[tuple[str, ...]] = get_args(SandboxMode)
DEFAULT_MODE: Final[SandboxMode] = "workspace-write"

FS_SANDBOX_DENIED: Final = "FS_SANDBOX_DENIED"
SANDBOX_UNAVAILABLE: Final = "SANDBOX_UNAVAILABLE"

SECRET_PATHS: Final = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".config/gcloud",
    ".config/gh",
    ".password-store",
)
"""Paths under ``$HOME`` a confined command cannot read (hidden behind an empty mount)."""

PROTECTED_NAMES: Final = (".git", ".dsh", "hooks.json", "codex-hooks.json")
"""Entries of each writable root that stay read-only under ``workspace-write``: what runs
later outside the sandbox — ``.git`` (its hooks and config run at the user's next git
command), ``.dsh/``, and the hook files dsh reads in a session's cwd
(``dsh.hooks.FILE_NAMES``). Confined commands cannot write, remove or rename them (when they
exist as the command starts), and ``write``/``edit`` refuse them (whether they exist or not)."""

BWRAP_PROBE_TIMEOUT_S: Final = 10.0

log = logging.getLogger("dsh.sandbox")


def default_temp_roots() -> tuple[Path, ...]:
    """``/tmp`` and the OS temp dir, symlinks resolved, without duplicates."""
    roots: list[Path] = []
    for candidate in ("/tmp", tempfile.gettempdir()):
        real = Path(os.path.realpath(candidate))
        if real not in roots:
            roots.append(real)
    return tuple(roots)


def default_hidden_paths() -> tuple[Path, ...]:
    """The :data:`SECRET_PATHS` under the user's home."""
    home = Path(os.path.expanduser("~"))
    return tuple(home / name for name in SECRET_PATHS)


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """The file policy of a session; the workspace is the call's (canonical) cwd.

    ``network``: whether a confined command may use the network (``read-only`` and
    ``workspace-write`` only; ``danger-full-access`` is never confined). ``temp_roots`` are
    writable besides the workspace under ``workspace-write``; ``hidden_paths`` cannot be
    read by a confined command.
    """

    mode: SandboxMode = DEFAULT_MODE
    network: bool = False
    temp_roots: tuple[Path, ...] = field(default_factory=default_temp_roots)
    hidden_paths: tuple[Path, ...] = field(default_factory=default_hidden_paths)
    runner: str | None = None
    """The sandbox program (default: :func:`bwrap_program`); relative to the workspace if relative."""
    backend: SandboxBackend = "auto"
    """Which kernel sandbox confines ``bash``: ``auto`` — bubblewrap where it builds a sandbox,
    else Landlock — or one of them only."""
    logged: bool = True
    """Whether the mode is the session's own choice, logged as ``sandbox/mode``; ``False`` for
    a deployment default, which the original does not log (replays run under one)."""
    shown: SandboxMode | None = None
    """The mode the runtime-context snapshot states when it is not :attr:`mode` — a replay of a
    ``danger-full-access`` recording runs confined to ``workspace-write`` yet shows the
    recording's text, so the model sees what the recorded model saw (``None``: :attr:`mode`)."""

    @property
    def stated_mode(self) -> SandboxMode:
        """The mode the session's runtime context states (:attr:`shown`, else :attr:`mode`)."""
        return self.shown or self.mode

    @property
    def confined(self) -> bool:
        return self.mode != "danger-full-access"

    def described(self) -> str:
        """What this policy does to a command, in words (the trust warning of a replay)."""
        if not self.confined:
            return "unconfined (danger-full-access)"
        writes = "no writes" if self.mode == "read-only" else "writes only in the workspace and temp dirs"
        network = "network on" if self.network else "network off"
        return f"confined by the kernel sandbox under {self.mode} ({writes}, {network})"

    def writable_roots(self, workspace: Path) -> tuple[Path, ...]:
        """The real directories writes may land in (none under ``read-only``)."""
        if self.mode == "read-only":
            return ()
        return (Path(os.path.realpath(workspace)), *self.temp_roots)

    def protected_paths(self, workspace: Path) -> tuple[Path, ...]:
        """The :data:`PROTECTED_NAMES` of every writable root (whether they exist or not)."""
        return tuple(root / name for root in self.writable_roots(workspace) for name in PROTECTED_NAMES)

    def read_only_inside(self, workspace: Path) -> tuple[Path, ...]:
        """The real paths of the existing protected entries that lie in a writable root: what
        the kernel sandboxes keep read-only inside the writable roots."""
        roots = self.writable_roots(workspace)
        out: list[Path] = []
        for path in self.protected_paths(workspace):
            real = Path(os.path.realpath(path))
            if os.path.lexists(path) and real.exists() and any(real.is_relative_to(r) for r in roots):
                out.append(real)
        return tuple(dict.fromkeys(out))


def _escalation_hint(what: str) -> str:
    return (
        f"[sandbox: escalation available — retry this exact {what} once with sandbox_permissions "
        "(the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
    )


def file_denied(mode: str) -> ToolError:
    """The original's refusal of a file write the policy forbids."""
    return tool_error(
        f"[sandbox: file access denied under {mode} mode]\n{_escalation_hint('operation')}", FS_SANDBOX_DENIED
    )


def check_file_write(policy: SandboxPolicy | None, real: Path, workspace: Path) -> None:
    """Refuse (``FS_SANDBOX_DENIED``) a write to the real path ``real`` the policy does not allow."""
    if policy is None or not policy.confined:
        return
    roots = policy.writable_roots(workspace)
    if not any(real.is_relative_to(root) for root in roots):
        raise file_denied(policy.mode)
    if any(real.is_relative_to(protected) for protected in policy.protected_paths(workspace)):
        raise file_denied(policy.mode)


def unavailable(mode: str, detail: str) -> ToolError:
    """The original's refusal to run a command when no sandbox backend is usable."""
    return tool_error(
        f'sandbox mode "{mode}" is requested but no sandbox backend is usable on this host; refusing '
        "to run the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel (Linux), "
        "ensure sandbox-exec is usable (macOS), or ensure the ACL restricted-token runner can start "
        f"(Windows) — otherwise switch the consumer to danger-full-access. Runner failure: {detail}",
        SANDBOX_UNAVAILABLE,
    )


UNPRIVILEGED_ID: Final = 65534
"""The uid and gid (``nobody``) a command started by root runs as inside bubblewrap's user
namespace; it maps to the caller's own ids outside, so what it writes stays the caller's."""


def bwrap_isolation() -> list[str]:
    """The options that take every privilege from the command: new user (nested ones refused),
    PID namespaces, every capability dropped, an unprivileged uid when the caller is root, no
    controlling terminal (``--new-session``), killed with its parent (``--die-with-parent``)."""
    args = ["--unshare-user", "--disable-userns", "--unshare-pid", "--cap-drop", "ALL"]
    if os.geteuid() == 0:
        args += ["--uid", str(UNPRIVILEGED_ID), "--gid", str(UNPRIVILEGED_ID)]
    return [*args, "--die-with-parent", "--new-session"]


def bwrap_arguments(policy: SandboxPolicy, workspace: Path, cwd: Path) -> list[str]:
    """The bubblewrap options (without the program and ``--``) for ``policy``."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *bwrap_isolation()]
    if not policy.network:
        args.append("--unshare-net")
    for root in policy.writable_roots(workspace):
        if root.is_dir():
            args += ["--bind", str(root), str(root)]
    for protected in policy.read_only_inside(workspace):  # over the read-write binds
        args += ["--ro-bind", str(protected), str(protected)]
    for hidden in policy.hidden_paths:
        if hidden.is_dir():
            args += ["--tmpfs", str(hidden), "--remount-ro", str(hidden)]
        elif hidden.exists():
            args += ["--ro-bind", "/dev/null", str(hidden)]
    args += ["--chdir", str(cwd)]
    return args


@functools.cache
def _probe(program: str) -> str | None:
    """``None`` when ``program`` builds a sandbox here, else why not (checked once per process)."""
    argv = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *bwrap_isolation()]
    argv += ["--unshare-net", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=BWRAP_PROBE_TIMEOUT_S, check=False)
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, exc.strerror or str(exc))
        return f"Error: spawn {program} {name}"
    except subprocess.TimeoutExpired:
        return f"{program} did not answer within {BWRAP_PROBE_TIMEOUT_S:g} s"
    if done.returncode == 0:
        return None
    text = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return text[0] if text else f"{program} exited with code {done.returncode}"


def bwrap_program() -> str:
    """The bubblewrap executable: ``$DSH_BWRAP`` if set, else ``bwrap`` on ``PATH``."""
    return os.environ.get("DSH_BWRAP") or shutil.which("bwrap") or "bwrap"


def bwrap_failure() -> str | None:
    """Why bubblewrap (:func:`bwrap_program`) cannot build a sandbox here (``None``: it can)."""
    return _probe(bwrap_program())


def runner_program(policy: SandboxPolicy, workspace: Path) -> str:
    """The sandbox program ``policy`` runs commands with."""
    return bwrap_program() if policy.runner is None else os.path.join(workspace, policy.runner)


BACKEND_ENV: Final = "DSH_SANDBOX_BACKEND"
"""Picks the backend of a policy left at ``auto``: ``auto``, ``bubblewrap`` or ``landlock``."""


def chosen_backend(policy: SandboxPolicy) -> SandboxBackend:
    """``policy.backend``, else (``auto``) :data:`BACKEND_ENV`'s; a bad value is a one-line error."""
    if policy.backend != "auto":
        return policy.backend
    value = os.environ.get(BACKEND_ENV, "auto").strip() or "auto"
    if value not in get_args(SandboxBackend):
        raise tool_error(f"{BACKEND_ENV}={value!r}: expected one of auto, bubblewrap, landlock")
    return cast(SandboxBackend, value)


def confining_backend(policy: SandboxPolicy, workspace: Path) -> tuple[SandboxBackend, str | None]:
    """The backend that confines ``policy``'s commands here, and why it cannot (``None``: it can)."""
    backend = chosen_backend(policy)
    if backend != "landlock":
        failure = _probe(runner_program(policy, workspace))
        named = backend == "bubblewrap" or policy.runner is not None or "DSH_BWRAP" in os.environ
        if failure is None or named:
            return "bubblewrap", failure
    landlock = landlock_failure()
    if landlock is None or backend == "landlock":
        return "landlock", landlock
    return "bubblewrap", f"{failure}; {landlock}"


def runner_failure(policy: SandboxPolicy | None, workspace: Path) -> str | None:
    """Why no sandbox runner of a confined ``policy`` can start here (e.g. ``Error: spawn
    <program> ENOENT``), or ``None`` when one can or nothing is confined."""
    if policy is None or not policy.confined:
        return None
    return confining_backend(policy, workspace)[1]


def confine(policy: SandboxPolicy | None, argv: list[str], workspace: Path, cwd: Path) -> list[str]:
    """``argv`` wrapped to run under ``policy`` (unchanged when unconfined); refuses when it cannot."""
    if policy is None or not policy.confined:
        return argv
    backend, failure = confining_backend(policy, workspace)
    if failure is not None:
        raise unavailable(policy.mode, failure)
    if backend == "landlock":
        if chosen_backend(policy) == "auto":  # bubblewrap was the first choice and cannot
            _tell_landlock_fallback()
        return landlock_argv(policy, workspace, argv)
    return [runner_program(policy, workspace), *bwrap_arguments(policy, workspace, cwd), "--", *argv]


@functools.cache
def _tell_landlock_fallback() -> None:
    """Say once per process (a warning of the ``dsh.sandbox`` logger: a line on stderr where
    nothing configured logging) that commands run under Landlock because bubblewrap cannot."""
    log.warning(
        "dsh: bubblewrap is not usable here (%s); bash runs under Landlock (%s=landlock chooses it "
        "without this notice)",
        bwrap_failure(),
        BACKEND_ENV,
    )


def runtime_context_text(policy: SandboxPolicy | None, workspace: Path) -> str:
    """The original's ``sandbox:policy`` runtime-context section for ``policy``.

    It states :attr:`SandboxPolicy.stated_mode` (the mode the session shows the model). No
    policy at all confines nothing: it states ``danger-full-access``, as the original's
    default deployment does.
    """
    mode = "danger-full-access" if policy is None else policy.stated_mode
    if mode == "danger-full-access":
        return (
            "Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict "
            "file modifications by available operations."
        )
    if mode == "workspace-write":
        root = '"' + str(Path(os.path.realpath(workspace))).replace("\\", "\\\\").replace('"', '\\"') + '"'
        return (
            "Current DSH file policy: workspace-write. Any available operation enforced by the DSH "
            f"file sandbox may modify files under the session workspace: {root}. Some platform "
            "temporary areas may also be writable."
        )
    return (
        "Current DSH file policy: read-only. Any available operation enforced by the DSH file "
        "sandbox cannot modify files in the standing mode. Do not refuse a required modification "
        "from this policy alone: try an available tool normally and follow any denial and "
        "escalation guidance it returns."
    )


_POLICY_LINE = re.compile(r"Current DSH file policy: (read-only|workspace-write|danger-full-access)\.")


def mode_in_runtime_context(text: str) -> SandboxMode | None:
    """The mode a runtime-context text (:func:`runtime_context_text`) states, if any."""
    found = _POLICY_LINE.search(text)
    return cast(SandboxMode, found.group(1)) if found else None

"""Privileged escapes: what root could do inside a sandbox that keeps its capabilities.

As root (the normal case in containers and CI) a confined command that kept its
capabilities remounts the read-only ``/`` read-write and writes anywhere, makes device
nodes, gives files away. Each case works unconfined as root — proving the test escapes —
and is refused under both kernel sandboxes, which drop every capability (bubblewrap also
runs the command as an unprivileged uid of a new user namespace). The last test runs a
confined write escape as a normal user (``setpriv --reuid=65534``), where the machine
lets root switch to one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.tools import ToolRegistry
from dsh.tools.sandbox import SandboxBackend, SandboxPolicy

from .conftest import bash, make_ctx, text_of

FULL = SandboxPolicy(mode="danger-full-access")
ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT, reason="the privileged escapes need root (CI runs as root)")

PRIVILEGED = {
    "remount": "mount -o remount,bind,rw / && echo pwned > {out}/escaped",
    "remount-nested-userns": "unshare -Urm sh -c 'mount -o remount,bind,rw / && echo pwned > {out}/escaped'",
    "mknod": "mknod null c 1 3 && echo made > {out}/escaped",
    "chown": "touch owned && chown 12345:12345 owned && echo gave > {out}/escaped",
}
"""Each writes ``escaped`` into ``outside`` (a ``danger-full-access`` proof) only when it worked."""
CAPS = "grep -q '^CapEff:[[:space:]]*0*[1-9a-f]' /proc/self/status && touch caps"
"""Proof that the unconfined command has capabilities (the check below looks for none)."""


def _worked(base: Path, case: str) -> bool:
    """Whether the privileged operation itself took effect (whatever the sandbox let it write)."""
    ws = base / "ws"
    if case == "mknod":
        return (ws / "null").exists()
    if case == "chown":
        return (ws / "owned").exists() and (ws / "owned").stat().st_uid == 12345
    if case == "capabilities":
        return (ws / "caps").exists()
    return (base / "outside" / "escaped").exists()


@as_root
@pytest.mark.parametrize("case", ["capabilities", "chown", "mknod"])
async def test_a_privileged_operation_works_as_root_unconfined(
    base: Path, registry: ToolRegistry, case: str
) -> None:
    """The checks below can fail (the remounts are shown red against bubblewrap keeping its
    capabilities: unconfined, ``/`` is writable anyway)."""
    command = CAPS if case == "capabilities" else PRIVILEGED[case].format(out=base / "outside")
    output = await bash(registry, make_ctx(base / "ws", FULL), command)
    assert _worked(base, case), text_of(output)


@as_root
@pytest.mark.parametrize("case", sorted(PRIVILEGED))
async def test_a_privileged_escape_is_refused_as_root_confined(
    base: Path, registry: ToolRegistry, case: str, backend: SandboxBackend
) -> None:
    command = PRIVILEGED[case].format(out=base / "outside")
    output = await bash(registry, make_ctx(base / "ws", SandboxPolicy(backend=backend)), command)
    assert not _worked(base, case), text_of(output)
    assert not (base / "outside" / "escaped").exists(), text_of(output)


@as_root
async def test_the_command_has_no_capability_and_bubblewrap_runs_it_unprivileged(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    command = "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status; id -u"
    output = await bash(registry, make_ctx(base / "ws", SandboxPolicy(backend=backend)), command)
    lines = text_of(output).split()
    assert lines[:8] == ["CapPrm:", "0" * 16, "CapEff:", "0" * 16, "CapBnd:", "0" * 16, "CapAmb:", "0" * 16]
    # bubblewrap: nobody inside its user namespace (the files it writes are still the caller's);
    # Landlock has no user namespace: uid 0 stays, without a capability
    assert lines[8] == ("65534" if backend == "bubblewrap" else "0")


async def test_the_workspace_stays_writable_and_files_stay_the_callers(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    ws = base / "ws"
    output = await bash(registry, make_ctx(ws, SandboxPolicy(backend=backend)), "echo ok > made && cat made")
    assert text_of(output) == "ok\n"
    assert (ws / "made").stat().st_uid == os.geteuid()


NOBODY = 65534
SETPRIV = shutil.which("setpriv")
REPO = Path(__file__).resolve().parents[2]
AS_NOBODY = [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
_AS_USER = """
import asyncio, json, sys
from pathlib import Path
from dsh.tools import ToolContext, builtin_registry
from dsh.tools.sandbox import SandboxPolicy
from tests.sandbox.conftest import BACKEND_FAILURES
ws, out, backend = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
if backend != "none" and BACKEND_FAILURES[backend]() is not None:
    sys.exit("cannot confine: " + str(BACKEND_FAILURES[backend]()))
policy = SandboxPolicy(mode="danger-full-access") if backend == "none" else SandboxPolicy(backend=backend)
ctx = ToolContext(session_id="s", call_id="c", cwd=ws, sandbox=policy)
cmd = f"id -u; mount -o remount,bind,rw / ; echo pwned > {out}/escaped; echo ok > mine"
args = json.dumps({"command": cmd, "description": "as a normal user"})
result = asyncio.run(builtin_registry(max_inline_bytes=None).call("bash", args, ctx))
print("".join(b.get("text", "") for b in result.content))
"""


_CAN_RUN = (
    "import subprocess, sys, dsh.tools, tests.sandbox.conftest; "
    "subprocess.run([sys.executable, '-V'], check=True)"
)


def _user_python() -> tuple[list[str], dict[str, str]] | None:
    """An interpreter uid 65534 can run dsh with (this one, else the system's of the same
    version, given this environment's packages), or ``None``."""
    site = [p for p in sys.path if p.endswith("site-packages")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO), *site])}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/bin/{version}"):
        probe = [SETPRIV or "setpriv", *AS_NOBODY, python, "-c", _CAN_RUN]
        done = subprocess.run(probe, capture_output=True, env=env, cwd=REPO, timeout=60, check=False)
        if done.returncode == 0:
            return [SETPRIV or "setpriv", *AS_NOBODY, python], env
    return None


USER_PYTHON = _user_python() if ROOT and SETPRIV is not None else None


@pytest.mark.skipif(
    USER_PYTHON is None, reason="switching to a normal user needs root, setpriv and a Python uid 65534 runs"
)
@pytest.mark.parametrize("backend", ["none", "bubblewrap", "landlock"])
def test_as_a_normal_user_the_escape_is_refused_confined(base: Path, backend: str) -> None:
    assert USER_PYTHON is not None
    argv, env = USER_PYTHON
    for path in (base, base / "ws", base / "outside"):
        os.chown(path, NOBODY, NOBODY)
    done = subprocess.run(
        [*argv, "-c", _AS_USER, str(base / "ws"), str(base / "outside"), backend],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO, env={**env, "HOME": str(base)},
    )  # fmt: skip
    if done.returncode != 0 and "cannot confine" in done.stderr:
        pytest.skip(f"{backend} cannot confine as uid {NOBODY} here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(NOBODY)  # a normal user keeps its own uid inside the sandbox
    assert (base / "ws" / "mine").stat().st_uid == NOBODY
    escaped = (base / "outside" / "escaped").exists()
    assert escaped == (backend == "none"), done.stdout

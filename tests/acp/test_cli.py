"""``dsh acp`` refuses to serve without what it needs: one line on stderr, exit 2, nothing on stdout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.acp.wire import SERVER, TIMEOUT, server_env


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVER, *args],
        input="",
        capture_output=True,
        text=True,
        env=server_env(),
        cwd=cwd,
        timeout=TIMEOUT,
        check=False,
    )


def test_a_missing_key_still_serves_and_creates_nothing(tmp_path: Path) -> None:
    """It asks for the key over ACP instead (tests/acp/test_auth.py); at EOF it exits 0."""
    done = run("--store", f"sqlite:{tmp_path / 's.db'}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (tmp_path / "s.db").exists()


def test_bad_replay_directory_and_log_file_exit_2(tmp_path: Path) -> None:
    missing = run("--replay", str(tmp_path / "nope"), "--store", "memory:", cwd=tmp_path)
    assert (missing.returncode, missing.stdout) == (2, "")
    assert "does not exist" in missing.stderr and len(missing.stderr.splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    unrecorded = run("--replay", str(empty), "--store", "memory:", cwd=tmp_path)
    assert (unrecorded.returncode, unrecorded.stdout) == (2, "")
    assert "session.jsonl is missing" in unrecorded.stderr
    bad_log = run("--replay", str(empty), "--log-file", str(tmp_path / "no" / "log"), cwd=tmp_path)
    assert (bad_log.returncode, bad_log.stdout) == (2, "")
    assert bad_log.stderr.startswith("dsh: error: --log-file")


NOISY = """
import os, sys
from pathlib import Path
from dsh.acp.transport import protected_stdio
log = Path(sys.argv[1]) if len(sys.argv) > 1 else None
with protected_stdio(log) as fds:
    os.write(2, b"e" * 300_000)
    print("stray print", flush=True)
    sys.stderr.write("stray stderr\\n")
    os.system("echo from-a-child; echo child-err >&2")
    os.write(fds.stdout_fd, b'{"ok":1}\\n')
print("restored")
"""


def noisy(*args: str) -> tuple[bytes, int]:
    """Run NOISY with stderr an unread pipe: it must neither block nor leak onto stdout."""
    proc = subprocess.Popen(
        [sys.executable, "-c", NOISY, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    assert proc.stdout is not None
    try:
        code = proc.wait(timeout=TIMEOUT)  # stdout is tiny; a blocked stderr would time out here
        out = proc.stdout.read()
    finally:
        proc.kill()
        proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
        proc.stdout.close()
    return out, code


def test_protected_stdio_keeps_stdout_for_frames_and_never_blocks_on_stderr(tmp_path: Path) -> None:
    out, code = noisy()
    assert (out, code) == (b'{"ok":1}\nrestored\n', 0)
    log = tmp_path / "log"
    out, code = noisy(str(log))
    assert (out, code) == (b'{"ok":1}\nrestored\n', 0)
    text = log.read_text()
    assert "stray print" in text and "stray stderr" in text and "from-a-child" in text and "child-err" in text
    assert text.count("e") >= 300_000


def test_without_the_sdk_extra_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = (
        "import sys\n"
        "class NoAcp:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'acp' or name.startswith('acp.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoAcp())\n"
        "from dsh.cli.acp_cmd import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocker, "--replay", str(tmp_path)],
        capture_output=True, text=True, env=server_env(), timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("dsh: error: dsh acp needs the Agent Client Protocol SDK")
    assert len(done.stderr.splitlines()) == 1

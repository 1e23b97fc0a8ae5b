"""What runs unconfined later stays read-only inside the writable roots: ``.git`` (its hooks
run at the user's next commit), ``.dsh/`` and the hook files dsh reads (``hooks.json``,
``codex-hooks.json``). A confined command cannot write, remove or rename them under either
kernel sandbox, and ``write``/``edit`` refuse them under ``workspace-write`` (the same
command and calls succeed under ``danger-full-access``, proving the test plants them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.hooks import FILE_NAMES
from dsh.tools import ToolRegistry
from dsh.tools.sandbox import PROTECTED_NAMES, SandboxBackend, SandboxPolicy

from .conftest import make_ctx, text_of

PLANT = (
    "echo evil > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; echo evil >> .git/config; "
    "echo evil > .dsh/hooks.json; echo evil > hooks.json; echo evil > codex-hooks.json; "
    "mv .git/HEAD .git/HEAD.old; cat .git/config; echo ok > sub/f"
)
FULL = SandboxPolicy(mode="danger-full-access")


@pytest.fixture
def ws(base: Path) -> Path:
    ws = base / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".dsh").mkdir()
    (ws / "hooks.json").write_text("{}")
    (ws / "codex-hooks.json").write_text("{}")
    (ws / "sub").mkdir()
    return ws


def _evil(path: Path) -> bool:
    """``path`` holds what a plant wrote (under Landlock a denied ``echo evil > NEW`` may
    leave NEW behind empty: a protected directory gets new empty entries, never content)."""
    return path.exists() and "evil" in path.read_text()


def _planted(ws: Path) -> list[str]:
    found = []
    if _evil(ws / ".git" / "hooks" / "pre-commit"):
        found.append("pre-commit")
    if "evil" in (ws / ".git" / "config").read_text():
        found.append("config")
    if not (ws / ".git" / "HEAD").exists():
        found.append("HEAD renamed")
    if _evil(ws / ".dsh" / "hooks.json"):
        found.append(".dsh")
    found += [name for name in ("hooks.json", "codex-hooks.json") if (ws / name).read_text() != "{}"]
    return found


def test_the_hook_files_dsh_reads_are_protected() -> None:
    assert set(FILE_NAMES.values()) <= set(PROTECTED_NAMES) and {".git", ".dsh"} <= set(PROTECTED_NAMES)


async def _bash(registry: ToolRegistry, ws: Path, policy: SandboxPolicy, command: str) -> str:
    args = json.dumps({"command": command, "description": "plant"})
    return text_of(await registry.call("bash", args, make_ctx(ws, policy)))


async def test_planting_works_unconfined(ws: Path, registry: ToolRegistry) -> None:
    await _bash(registry, ws, FULL, PLANT)
    assert _planted(ws) == ["pre-commit", "config", "HEAD renamed", ".dsh", "hooks.json", "codex-hooks.json"]


async def test_a_confined_command_cannot_plant_but_reads_and_writes_elsewhere(
    ws: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    text = await _bash(registry, ws, SandboxPolicy(backend=backend), PLANT)
    assert _planted(ws) == [], text
    assert "[core]" in text  # still readable
    assert (ws / "sub" / "f").read_text() == "ok\n"  # the rest of the workspace is writable


async def test_a_confined_command_cannot_remove_them(
    ws: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    text = await _bash(
        registry, ws, SandboxPolicy(backend=backend), "rm -rf .git .dsh hooks.json; mv .git gone"
    )
    assert (ws / ".git" / "config").exists() and (ws / ".dsh").is_dir() and (ws / "hooks.json").exists(), text


@pytest.mark.parametrize(
    "path", [".git/hooks/pre-commit", ".git/config", ".dsh/hooks.json", "hooks.json", "codex-hooks.json"]
)
async def test_the_file_tools_refuse_them_under_workspace_write(
    ws: Path, registry: ToolRegistry, path: str
) -> None:
    args = json.dumps({"file_path": path, "content": "evil\n"})
    confined = await registry.call("write", args, make_ctx(ws, SandboxPolicy()))
    assert confined.is_error and confined.code == "FS_SANDBOX_DENIED", text_of(confined)
    assert "evil" not in ((ws / path).read_text() if (ws / path).exists() else "")
    fine = await registry.call(
        "write", json.dumps({"file_path": "sub/ok.txt", "content": "x"}), make_ctx(ws, SandboxPolicy())
    )
    assert not fine.is_error, text_of(fine)


async def test_the_file_tools_write_them_under_danger_full_access(ws: Path, registry: ToolRegistry) -> None:
    out = await registry.call(
        "write", json.dumps({"file_path": ".git/hooks/pre-commit", "content": "x"}), make_ctx(ws, FULL)
    )
    assert not out.is_error, text_of(out)


async def test_a_workspace_under_a_temp_root_keeps_a_usable_temp_dir(
    tmp_path: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    """Under Landlock the temp root holding such a workspace cannot get new top-level entries
    (its grant is split around ``.git``): the runner gives the command a temp dir of its own."""
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    command = "t=$(mktemp) && echo ok > $t && cat $t && rm $t; echo evil > .git/hooks/pre-commit"
    text = await _bash(registry, ws, SandboxPolicy(backend=backend), command)
    assert text.startswith("ok\n"), text
    assert not _evil(ws / ".git" / "hooks" / "pre-commit")


async def test_a_symlink_beside_them_grants_nothing(
    ws: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    """A link made before the call, next to ``.git``: the Landlock split must not grant its target."""
    (ws / "gitlink").symlink_to(ws / ".git")
    text = await _bash(registry, ws, SandboxPolicy(backend=backend), "echo evil > gitlink/hooks/pre-commit")
    assert not _evil(ws / ".git" / "hooks" / "pre-commit"), text


async def test_a_marker_at_the_top_of_a_git_workspace_can_be_made_but_no_hook_planted(
    ws: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    """A Stop hook's ``touch .stop_fired`` (the original's hook recordings) works at the top of a
    workspace holding ``.git`` under both backends; planting a hook through a new file, a
    symbolic link, a hard link or a rename into ``.git`` does not."""
    (ws / "sub" / "evil.sh").write_text("echo evil\n")
    command = (
        "touch .stop_fired && echo marked; ln -s ../../sub/evil.sh .git/hooks/post-checkout; "
        "ln sub/evil.sh .git/hooks/pre-push; mv sub/evil.sh .git/hooks/pre-rebase; "
        "echo evil > .git/hooks/pre-commit"
    )
    text = await _bash(registry, ws, SandboxPolicy(backend=backend), command)
    assert text.startswith("marked\n") and (ws / ".stop_fired").is_file(), text
    hooks = ws / ".git" / "hooks"
    assert not any(_evil(hooks / name) for name in ("post-checkout", "pre-push", "pre-rebase", "pre-commit"))
    assert not (hooks / "post-checkout").is_symlink()

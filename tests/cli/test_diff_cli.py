"""``dsh diff A B``: two runs compared as replay compares them, by running the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.cli.conftest import Dsh, assert_user_error

ANSWERS = '"assistant/message"'
SCENARIOS = Path(__file__).resolve().parents[2] / "src" / "dsh" / "snapshot" / "scenarios"


def _tampered(tmp_path: Path, name: str, file: str, old: str, new: str, only: str = "") -> Path:
    """A copy of a bundled scenario with ``old`` replaced in the lines of ``file`` holding ``only``."""
    copy = tmp_path / f"{name}-tampered"
    shutil.copytree(SCENARIOS / name, copy)
    log = copy / file
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = [line.replace(old, new) if only in line else line for line in lines]
    assert edited != lines
    log.write_text("".join(edited), encoding="utf-8")
    return copy


def test_a_run_against_itself_is_equal(dsh_sqlite: Dsh) -> None:
    run = SCENARIOS / "subagent-mixed"
    result = dsh_sqlite("diff", run, run)
    assert result.code == 0, result.stderr
    assert "behave the same" in result.stdout.splitlines()[0]
    document = dsh_sqlite("diff", run, run, "--json").json()
    assert document["equal"] is True and document["divergence"] is None
    assert [s["label"] for s in document["sessions"]] == ["root", "root/child 1", "root/child 2"]
    assert [r["text"] for r in document["sessions"][0]["rows"]["b"]][-1] == "PARENT_DONE"


def test_a_tampered_final_answer_differs(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    tampered = _tampered(
        tmp_path, "subagent-mixed", "session.jsonl", "PARENT_DONE", "PARENT_GONE", '"assistant/message"'
    )
    result = dsh_sqlite("diff", SCENARIOS / "subagent-mixed", tampered)
    assert result.code == 1, result.stderr
    head = result.stdout.splitlines()[0]
    assert "differ: session root" in head and "assistant message" in head
    assert "-    PARENT_DONE" in result.stdout and "+    PARENT_GONE" in result.stdout
    document = json.loads(dsh_sqlite("diff", SCENARIOS / "subagent-mixed", tampered, "--json").stdout)
    assert document["equal"] is False
    assert "assistant message" in document["divergence"]["what"]
    assert "PARENT_GONE" in document["divergence"]["b"] and "PARENT_GONE" in document["divergence"]["diff"]


def test_a_tampered_tool_result_names_the_call(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    tampered = _tampered(tmp_path, "tool-call-turn", "session.jsonl", "SNAPSHOT_OK\\n", "SNAPSHOT_KO\\n")
    result = dsh_sqlite("diff", SCENARIOS / "tool-call-turn", tampered)
    assert result.code == 1
    assert "the tool result of call call_bash_1 (bash)" in result.stdout.splitlines()[0]


def test_a_child_difference_names_the_child(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    tampered = _tampered(tmp_path, "subagent-mixed", "session.1.jsonl", "ALPHA", "OMEGA", ANSWERS)
    result = dsh_sqlite("diff", SCENARIOS / "subagent-mixed", tampered, "--json")
    assert result.code == 1
    divergence = json.loads(result.stdout)["divergence"]
    # the parent's logs are untouched (its tool result still says ALPHA): the child differs
    assert divergence["session"] == "root/child 1" and "assistant message" in divergence["what"]


def test_markdown_for_a_pull_request(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    tampered = _tampered(
        tmp_path, "subagent-mixed", "session.jsonl", "PARENT_DONE", "PARENT_GONE", '"assistant/message"'
    )
    out = dsh_sqlite("diff", SCENARIOS / "subagent-mixed", tampered, "--markdown").stdout
    assert out.startswith("### ❌ dsh diff") and "```diff\n--- A\n+++ B" in out
    assert "| side | call | turn.step | tool calls | results | text | in/out tokens | ms |" in out


def test_stored_sessions_by_prefix(dsh_sqlite: Dsh, upstream: Path) -> None:
    rec = upstream / "subagent-fork-in-process"
    dsh_sqlite("sessions", "import", rec / "session.jsonl", rec / "session.1.jsonl").ok()
    assert dsh_sqlite("diff", "96cf", "96cf").code == 0
    assert dsh_sqlite("diff", "96cf", rec).code == 0  # a stored session against its recording
    other = upstream / "subagent-spawn-in-process"
    assert dsh_sqlite("diff", "96cf", other).code == 1


def test_bad_input(dsh_sqlite: Dsh) -> None:
    run = SCENARIOS / "text-turn"
    assert_user_error(dsh_sqlite("diff", "nosuchid", run), "nosuchid")
    assert dsh_sqlite("diff", "nosuchid", run).code == 2
    assert_user_error(dsh_sqlite("diff", run, run, "--json", "--markdown"), "--json", "--markdown")


def test_two_runs_in_different_workspaces_behave_the_same(dsh_sqlite: Dsh, upstream: Path) -> None:
    """Each side's own workspace path is ``{{cwd}}`` (a tool result names it), as in a replay."""
    for _ in range(2):
        dsh_sqlite("replay", upstream / "fs-write", "--trust", "--store", dsh_sqlite.store).ok()
    a, b = (row["id"] for row in dsh_sqlite("sessions", "list", "--json").json())
    assert dsh_sqlite("log", a).stdout.count("/work/notes.txt") >= 1  # the literal workspace is logged
    result = dsh_sqlite("diff", a, b)
    assert result.code == 0, result.stdout

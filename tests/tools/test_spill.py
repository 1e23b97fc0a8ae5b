"""The tool-result spill: long results saved to a file and replaced by the original's preview."""

from __future__ import annotations

import hashlib
import json
import re
import stat
from pathlib import Path

import pytest

from dsh.events.messages import text_block
from dsh.tools import SpillPolicy, ToolArgs, ToolContext, ToolOutput, ToolRegistry, builtin_registry
from dsh.tools.spill import default_spill_root, preview

from .conftest import make_ctx, text_of

SPILLED = "SPILL_START-" + "x" * 2000 + "-SPILL_END"
_LOCATOR = re.compile(r"stored at: (\S+)\. Use read")


def _recorded_spill(upstream: Path) -> str:
    for line in (upstream / "bash-spill" / "session.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "tool/result":
            return str(event["data"]["message"]["content"][0]["content"][0]["text"])
    raise AssertionError("bash-spill has no tool/result")


def _policy(tmp_path: Path, **kwargs: object) -> SpillPolicy:
    return SpillPolicy(tmp_path / "spill", token=lambda: "0123456789ab", **kwargs)  # type: ignore[arg-type]


def test_preview_reproduces_the_recorded_bash_spill(upstream: Path) -> None:
    recorded = _recorded_spill(upstream)
    match = _LOCATOR.search(recorded)
    assert match is not None
    assert len(SPILLED.encode()) == 2022
    assert preview(SPILLED, match.group(1), 800) == recorded
    assert len(recorded.encode()) == 800
    head, rest = recorded.split("\n\n", 1)
    assert head == "SPILL_START-" + "x" * 291 + "x" * 292 + "-SPILL_END"
    assert len(head) == 303 + 302
    assert rest.startswith("(Omitted 1417 bytes. Full formatted result stored at: ")


def test_default_root_is_per_user_and_as_long_as_the_originals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DSH_SPILL_DIR", raising=False)
    root = default_spill_root()
    assert re.fullmatch(r"dsh-spill-[0-9a-f]{12}", root.name)
    assert len(root.name) == len("dsh-acp-snap-ee77dff02")
    assert default_spill_root() == root
    monkeypatch.setenv("DSH_SPILL_DIR", "/somewhere/else")
    assert default_spill_root() == Path("/somewhere/else")
    assert SpillPolicy().root == Path("/somewhere/else")


def test_a_long_result_is_saved_and_previewed(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    out = policy.apply("bash", "session-id-1", ToolOutput.text(SPILLED))
    text = text_of(out)
    digest = hashlib.sha256(b"session-id-1").hexdigest()[:12]
    saved = tmp_path / "spill" / f"session-{digest}" / "0123456789ab-bash.txt"
    assert text.endswith(
        f"(Omitted {2022 - len(text.split(chr(10) * 2)[0])} bytes. Full formatted result stored at: "
        f"{saved}. Use read with offset/limit, or grep this path to search within it.)"
    )
    assert len(text.encode()) <= 800
    assert saved.read_text() == SPILLED
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "spill").stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("tool", "output"),
    [
        ("read", ToolOutput.text(SPILLED)),
        ("bash", ToolOutput.text("x" * 800)),
        ("bash", ToolOutput.error(SPILLED)),
        ("bash", ToolOutput([text_block(SPILLED), {"type": "image", "data": "…"}])),
    ],
    ids=["read-is-exempt", "at-the-cap", "errors", "not-all-text"],
)
def test_what_is_not_spilled(tool: str, output: ToolOutput, tmp_path: Path) -> None:
    assert _policy(tmp_path).apply(tool, "s", output) is output
    assert not (tmp_path / "spill").exists()


def test_multibyte_text_is_cut_on_character_boundaries(tmp_path: Path) -> None:
    text = "é" * 1000 + "✓" * 300
    out = _policy(tmp_path).apply("bash", "s", ToolOutput.text(text))
    shown = text_of(out)
    assert len(shown.encode()) <= 800
    head = shown.split("\n\n")[0]
    assert head.startswith("é") and head.endswith("✓")
    omitted = int(re.search(r"Omitted (\d+) bytes", shown).group(1))  # type: ignore[union-attr]
    assert omitted == len(text.encode()) - len(head.encode())


def test_a_failed_save_keeps_the_result(tmp_path: Path) -> None:
    (tmp_path / "spill").write_text("a file where the directory should be")
    output = ToolOutput.text(SPILLED)
    assert _policy(tmp_path).apply("bash", "s", output) is output


def test_a_cap_too_small_for_the_notice_keeps_the_result(tmp_path: Path) -> None:
    output = ToolOutput.text(SPILLED)
    assert _policy(tmp_path, max_inline_bytes=100).apply("bash", "s", output) is output


class _LongTool:
    name = "long"
    description = "Return a long text."
    args_model = ToolArgs

    def is_concurrency_safe(self, args: object) -> bool:
        return True

    async def run(self, args: object, ctx: ToolContext) -> ToolOutput:
        return ToolOutput.text(SPILLED)


async def test_the_registry_spills_and_read_can_open_the_spill_file(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ctx = make_ctx(workspace)
    registry = builtin_registry(spill_dir=tmp_path / "spill")
    registry.register(_LongTool())
    shown = text_of(await registry.call("long", "{}", ctx))
    match = _LOCATOR.search(shown)
    assert match is not None and match.group(1).startswith(str(tmp_path / "spill"))
    read = await registry.call("read", json.dumps({"file_path": match.group(1)}), ctx)
    assert not read.is_error, text_of(read)
    assert "\n1: SPILL_START-xxx" in text_of(read)


async def test_registry_spill_defaults_and_opt_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSH_SPILL_DIR", str(tmp_path / "env-spill"))
    default = builtin_registry()
    assert default.spill is not None
    assert (default.spill.root, default.spill.max_inline_bytes) == (tmp_path / "env-spill", 800)
    assert builtin_registry(max_inline_bytes=None).spill is None
    assert ToolRegistry().spill is None

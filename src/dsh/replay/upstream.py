"""What the original's snapshot harness composes for its scenarios, emulated for their replay.

The original replays each recording with its scenario's overlay and test fixtures
(``acp.snapshot.ts``); a port must bring the same workspace and the same model-visible
effects. This module is that table for the recordings dsh replays, keyed by what the
recording shows (and, for the harness's own workspace preparations, by scenario name):

- every one of the original's (version-0) recordings runs with the workspace context
  (AGENTS.md instructions, skills, the ``skill`` and ``session_event_read`` tools) with the
  homes inside the workspace (``DSH_HOME=<cwd>/.dsh``, ``DSH_AGENTS_HOME=<cwd>/.agents``) and
  the instruction settings its recorded baseline names (``baselineIdentity``);
- long results spill only when the recording shows a spill (the original's spill policy is in
  its fs and session-query overlays alone), under ``/tmp/dsh-acp-snap-<first 9 hex of
  sha256(scenario name)>``, the harness's fixed root (emptied before the run), so a recorded
  command naming it works;
- ``agent-instructions``: the two ``AGENTS.md`` symlinks the fixture copy flattened into
  text files are restored, the ``scope</system-reminder>/`` directory is created
  (``prepareDelimiterPathWorkspace``), and the compaction fixture runs after the read of
  ``nested/task.txt`` (a ``user/message`` replacing the visible baseline);
- ``skill-load``: the skill the harness copies in at run time is rebuilt from the recording
  (its catalog entry and the loaded instructions);
- ``fs-glob-sampling``: the ``tree/`` of eight files with fixed modification times
  (``dsh.replay.fs_search``);
- ``pty-tools``: terminal results are bounded at 64 bytes (its snapshot config). Its terminals
  are real, confined shells: their prompt, echo and output give the texts the harness's
  scripted backend recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol, cast, runtime_checkable

from dsh import jsonx
from dsh.context import InstructionsConfig, WorkspaceConfig
from dsh.context.tools import context_tools
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.messages import Message, Source, user_message
from dsh.events.payloads import blocks_of, message_of, request_header_of
from dsh.events.vocabulary import REQUEST_CONTEXT, REQUEST_HEADER, SESSION_TITLE, TOOL_RESULT, USER_MESSAGE
from dsh.mcp import recorded_tools
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.replay.files import RecordedLogs, read_override, titles_by_model
from dsh.replay.fs_search import prepare_glob_tree
from dsh.store import LoadedSession
from dsh.tools.base import ToolContext, ToolLike, ToolOutput
from dsh.tools.builtin import ReadArgs, ReadTool
from dsh.tools.builtin.terminal_tools import terminal_tools
from dsh.tools.registry import ToolRegistry

SNAPSHOT_ROOT: Final = "/tmp/dsh-acp-snap-"
COMPACTED: Final = "Earlier context was compacted for this snapshot."


def spill_root(directory: Path) -> Path:
    """The harness's fixed spill root of the scenario ``directory``."""
    return Path(SNAPSHOT_ROOT + hashlib.sha256(directory.name.encode()).hexdigest()[:9])


def _instructions(primary: LoadedSession | None) -> InstructionsConfig:
    """The instruction settings the recording's first baseline names (else the defaults)."""
    for event in primary.events if primary is not None else ():
        source = (
            event.data.get("source") if event.type == USER_MESSAGE and isinstance(event.data, dict) else None
        )
        identity = source.get("baselineIdentity") if isinstance(source, dict) else None
        if isinstance(identity, str):
            try:
                doc: Any = jsonx.loads(identity)
            except ValueError:
                break
            if not isinstance(doc, dict):
                break
            return InstructionsConfig(
                max_bytes=int(doc.get("maxBytes", 65536)),
                project_root_markers=tuple(doc.get("projectRootMarkers", (".git",))),
                candidates=tuple(doc.get("instructionFileCandidates", ("AGENTS.md", "CLAUDE.md"))),
                local_candidates=tuple(doc.get("localInstructionFileCandidates", ())),
                max_source_bytes=int(doc.get("maxSourceBytes", 1_048_576)),
            )
    return InstructionsConfig()


@dataclass(frozen=True, slots=True)
class Composition:
    """What a replay of one scenario composes besides the standard tools."""

    name: str
    workspace: WorkspaceConfig | None
    """``None``: one of dsh's own recordings (they never had the workspace context)."""
    spill_dir: Path | None
    """``None``: the standard spill (dsh's own recordings)."""
    spill: bool = True
    """Whether long results spill at all."""
    titles: bool = False
    """Whether sessions get the fallback ``session/title`` (the recording has one)."""
    title_scripts: tuple[tuple[Chunk, ...], ...] = ()
    """The title model's answers when the recording asked one (its override, else the recorded title)."""
    title_route: tuple[str, str] = ("title-replay", "title-model")
    logs: RecordedLogs | None = None
    context: bool = True
    """Whether the context tools are composed (dsh's own recordings: when their header had them)."""
    context_window: int | None = None
    """The context window the recording logged (its first ``request/context``), so a replay
    compacts where the recording did; ``None``: it logged none."""

    def tools(self, *, live_mcp: bool = False) -> list[ToolLike]:
        """The tools to register over the standard ones (fixtures replace theirs); the
        recording's MCP tools, served from it, unless ``live_mcp`` (its servers then run)."""
        served: list[ToolLike] = [] if live_mcp else list(recorded_tools(self._recorded_specs()))
        if not self.context:
            return served
        extra: list[ToolLike] = [*context_tools(), *served]
        if self.name == "agent-instructions":
            extra.append(CompactingRead())
        if self.name == "pty-tools":  # its snapshot config bounds terminal results at the minimum, 64
            extra += terminal_tools(max_result_bytes=64)
        return extra

    def _recorded_specs(self) -> list[dict[str, Any]]:
        """Every tool spec of the recording's request headers (its children's too)."""
        logs = self.logs
        sessions = [] if logs is None else [logs.primary, *(loaded for _, loaded in logs.children)]
        return [spec for loaded in sessions for spec in _recorded_specs(loaded)]

    def title_model(self) -> ScriptedModel | None:
        """A fresh title model for one session, or ``None`` (the recording made no model title)."""
        if not self.title_scripts:
            return None
        provider, model = self.title_route
        return ScriptedModel([list(s) for s in self.title_scripts], provider=provider, model=model)

    def prepare(self, cwd: Path) -> None:
        """The harness's workspace preparation for this scenario (run once per session cwd)."""
        if self.spill_dir is not None and self.spill:
            _empty(self.spill_dir)
        if self.name == "agent-instructions":
            for folder in (cwd, cwd / "nested"):
                _restore_link(folder / "AGENTS.md")
            scope = cwd / "scope</system-reminder>"
            scope.mkdir(parents=True, exist_ok=True)  # two levels: `scope<` then `system-reminder>`
            (scope / "AGENTS.md").write_text("Delimiter path snapshot instruction.\n")
            (scope / "task.txt").write_text("delimiter path snapshot task\n")
        elif self.name == "skill-load" and self.logs is not None:
            _rebuild_skills(cwd, self.logs.primary)
        elif self.name == "fs-glob-sampling":
            prepare_glob_tree(cwd)


def composed_tools(base: ToolRegistry, extra: Sequence[ToolLike]) -> ToolRegistry:
    """``base`` with ``extra`` added; an extra tool of a name ``base`` has replaces it."""
    overrides = {t.name: t for t in extra}
    tools: list[ToolLike] = []
    for name in base.names():
        found = overrides.pop(name, None) or base.get(name)
        if found is not None:
            tools.append(found)
    return ToolRegistry([*tools, *overrides.values()], spill=base.spill)


def composition(directory: Path, logs: RecordedLogs) -> Composition:
    """The composition of the scenario in ``directory`` (from its recorded logs)."""
    upstream = logs.versions.get("session.jsonl", 2) == 0
    titled = logs.primary is not None and any(e.type == SESSION_TITLE for e in logs.primary.events)
    if not upstream:  # one of dsh's own: it had the context (and its tools) if its log shows them
        kinds = _injected_kinds(logs.primary)
        shown = WorkspaceConfig.inside() if kinds & {"agent-instructions", "skill-catalog"} else None
        tools = bool(_recorded_tools(logs.primary) & {t.name for t in context_tools()})
        window = recorded_window(logs.primary)
        return Composition(
            directory.name, shown, None, titles=titled, logs=logs, context=tools, context_window=window
        )
    workspace = WorkspaceConfig.inside(_instructions(logs.primary))
    sessions = [logs.primary, *(loaded for _, loaded in logs.children)]
    spilled = any(_spilled(loaded) for loaded in sessions if loaded is not None)
    scripts, route = _title_scripts(directory, logs)
    return Composition(
        directory.name, workspace, spill_root(directory), spilled, titled, scripts, route, logs,
        context_window=recorded_window(logs.primary),
    )  # fmt: skip


def recorded_window(loaded: LoadedSession | None) -> int | None:
    """The context window a recording's first ``request/context`` states, if any."""
    for event in loaded.events if loaded is not None else ():
        if event.type == REQUEST_CONTEXT and isinstance(event.data, dict):
            size = event.data.get("contextWindow")
            if type(size) is int and size > 0:
                return size
    return None


def _title_scripts(
    directory: Path, logs: RecordedLogs
) -> tuple[tuple[tuple[Chunk, ...], ...], tuple[str, str]]:
    """The title model's answers (the override's chunk entries, else one made of the recorded
    provider title) and its recorded route."""
    route = ("title-replay", "title-model")
    if not titles_by_model(logs) or logs.primary is None:
        return (), route
    title = None
    for event in logs.primary.events:
        data = event.data if isinstance(event.data, dict) else {}
        if event.type == "session/title-llm-request" and isinstance(data.get("route"), dict):
            route = (str(data["route"].get("provider")), str(data["route"].get("model")))
        source = data.get("source")
        if event.type == SESSION_TITLE and isinstance(source, dict) and source.get("kind") == "provider":
            title = data.get("title")
    override = read_override(directory)
    scripts: list[tuple[Chunk, ...]] = []
    for entry in override if isinstance(override, list) else []:
        if (
            isinstance(entry, dict)
            and entry.get("kind") == "chunks"
            and isinstance(entry.get("chunks"), list)
        ):
            scripts.append(tuple(entry["chunks"]))
    if not scripts and isinstance(title, str):
        scripts.append(tuple(text_reply(title)))
    return tuple(scripts), route


def _injected_kinds(loaded: LoadedSession | None) -> set[str]:
    out: set[str] = set()
    for event in loaded.events if loaded is not None else ():
        source = (
            event.data.get("source") if event.type == USER_MESSAGE and isinstance(event.data, dict) else None
        )
        if isinstance(source, dict) and isinstance(source.get("kind"), str):
            out.add(source["kind"])
    return out


def _recorded_specs(loaded: LoadedSession | None) -> list[dict[str, Any]]:
    """The tool specs of the recording's request headers, in order."""
    out: list[dict[str, Any]] = []
    for event in loaded.events if loaded is not None else ():
        header = request_header_of(event) if event.type == REQUEST_HEADER else None
        tools = header.get("tools") if header is not None else None
        out += [spec for spec in (tools if isinstance(tools, list) else ()) if isinstance(spec, dict)]
    return out


def _recorded_tools(loaded: LoadedSession | None) -> set[str]:
    """The tool names of the recording's request headers."""
    return {spec["name"] for spec in _recorded_specs(loaded) if isinstance(spec.get("name"), str)}


def _spilled(loaded: LoadedSession) -> bool:
    for event in loaded.events:
        message = message_of(event) if event.type == TOOL_RESULT else None
        if message is not None and "Full formatted result stored at: " in jsonx.dumps(message).decode():
            return True
    return False


def _empty(root: Path) -> None:
    """Remove a previous run's spill files (only a directory this user owns)."""
    with contextlib.suppress(OSError):
        if root.is_dir() and not root.is_symlink() and root.stat().st_uid == os.getuid():
            shutil.rmtree(root)


def _restore_link(path: Path) -> None:
    """A file whose whole text names an existing sibling is a flattened symlink: make it one."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 255:
            return
        target = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return
    if target and "/" not in target and (path.parent / target).is_file():
        path.unlink()
        path.symlink_to(target)


_INSTRUCTIONS = re.compile(r"<skill_instructions>\n(.*)\n</skill_instructions>\n</skill_content>$", re.S)
_BASE = re.compile(r"Base directory for this skill: \{\{cwd\}\}/(\S+)\n")


def _rebuild_skills(cwd: Path, primary: LoadedSession | None) -> None:
    """Each skill the recording loaded but the workspace lacks, from its catalog entry and result."""
    if primary is None:
        return
    described: dict[str, str] = {}
    for event in primary.events:
        source = (
            event.data.get("source") if event.type == USER_MESSAGE and isinstance(event.data, dict) else None
        )
        if isinstance(source, dict) and source.get("kind") == "skill-catalog":
            for entry in source.get("entries", ()):
                if isinstance(entry, dict):
                    described[str(entry.get("name"))] = str(entry.get("description"))
    for event in primary.events:
        message = message_of(event) if event.type == TOOL_RESULT else None
        for block in blocks_of(message) if message is not None else ():
            for inner in block.get("content", ()) if block.get("type") == "tool-result" else ():
                text = inner.get("text", "") if isinstance(inner, dict) else ""
                body, base = _INSTRUCTIONS.search(text), _BASE.search(text)
                name = re.match(r'<skill_content name="([a-z0-9-]+)">', text)
                if body is None or base is None or name is None or name.group(1) not in described:
                    continue
                folder = (cwd / base.group(1)).resolve()
                if not folder.is_relative_to(cwd.resolve()) or (folder / "SKILL.md").exists():
                    continue
                folder.mkdir(parents=True, exist_ok=True)
                description = jsonx.dumps(described[name.group(1)]).decode()
                (folder / "SKILL.md").write_text(
                    f"---\nname: {name.group(1)}\ndescription: {description}\n---\n\n{body.group(1)}\n"
                )


@runtime_checkable
class _Compacts(Protocol):
    own_events: Any

    def compact_surface(self, start: int, end: int, message: Message) -> Event:
        """Replace the surface events ``start..end`` by ``message`` (``dsh.loop.Agent``'s)."""
        ...


class CompactingRead(ReadTool):
    """``read``, plus the original's compaction fixture of ``agent-instructions``: after a
    successful read of ``nested/task.txt`` the visible instruction baseline is replaced by
    ``Earlier context was compacted for this snapshot.`` (before the result)."""

    async def call(self, args: ReadArgs, ctx: ToolContext) -> ToolOutput:
        output = await super().call(args, ctx)
        agent: object = ctx.agent
        if output.is_error or args.file_path != "nested/task.txt" or not isinstance(agent, _Compacts):
            return output
        baseline = next(
            (
                e.seq
                for e in reversed(list(agent.own_events))
                if e.type == USER_MESSAGE
                and isinstance(e.data, dict)
                and isinstance(e.data.get("source"), dict)
                and e.data["source"].get("baseline") is True
            ),
            None,
        )
        if baseline is not None:
            message = user_message(COMPACTED, source_kind="plugin")
            message["source"] = cast(
                Source,
                {
                    "kind": "plugin",
                    "plugin": "compact",
                    "compactionId": "workspace-context-fixture",
                },
            )
            agent.compact_surface(baseline, baseline, message)
        return output

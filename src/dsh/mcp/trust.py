"""Whether a workspace's ``.mcp.json`` servers start: the one decision, asked once per workspace
and file content, remembered under the user's dsh home.

A cloned repository's ``.mcp.json`` names commands dsh would run at the first turn. They start
only when trusted: by ``--trust-mcp`` / ``DSH_TRUST_MCP=1`` (this run), by an answer
remembered for this workspace and this exact file (its SHA-256: a changed file asks again),
or by the person at the terminal (``ask``; the CLI asks when stdin is a terminal). Without a
terminal and without the flag they do not start, and one line says how to trust them. The
user's own servers (``--mcp-config FILE``) and an ACP client's (``session/new``
``mcpServers``) are never asked about; a workspace server one of them replaces is not either.
Answers live in ``<dsh home>/mcp-trust.json``: ``{"version": 1, "workspaces": {DIR:
{"sha256", "trusted", "servers"}}}`` (the last answer per workspace).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from dsh.errors import McpConfigError, StoreError
from dsh.jsonx import JSONDecodeError, dumps, loads
from dsh.mcp.complaints import Notice
from dsh.mcp.config import WORKSPACE_FILE, HttpServer, McpServerSpec, load_config, parse_config
from dsh.store.logfile import write_file_atomic

TRUST_FILE: Final = "mcp-trust.json"
TRUST_ENV: Final = "DSH_TRUST_MCP"


@dataclass(frozen=True, slots=True)
class Proposal:
    """The workspace's servers dsh would start, as the person judging them should see them."""

    path: Path
    digest: str
    """SHA-256 of the file's bytes (what an answer is remembered for)."""
    servers: tuple[McpServerSpec, ...]
    shown: tuple[tuple[str, tuple[str, ...]], ...]
    """Each server's name and what it runs as the file writes it (``${VAR}`` unexpanded:
    no secret of the environment shown): ``[command, *args]``, or ``[type, url]``."""

    @property
    def names(self) -> str:
        return ", ".join(name for name, _ in self.shown)

    def without(self, names: set[str]) -> Proposal:
        """The proposal less the servers of ``names`` (the user's own replace them)."""
        return replace(
            self,
            servers=tuple(s for s in self.servers if s.name not in names),
            shown=tuple(s for s in self.shown if s[0] not in names),
        )


Ask = Callable[[Proposal], bool | None]
"""Asks the person: ``True`` starts them, ``False`` does not (both remembered for this file),
``None`` does not this time (asked again next time)."""


def _as_written(spec: McpServerSpec, entry: Any) -> tuple[str, ...]:
    if isinstance(spec, HttpServer):
        return (spec.transport, str(entry.get("url", "")))
    return (str(entry.get("command", "")), *(str(a) for a in entry.get("args", [])))


def read_workspace(workspace: Path) -> Proposal | None:
    """The workspace's ``.mcp.json`` (``None`` when it has none); a bad file: ``McpConfigError``."""
    path = workspace / WORKSPACE_FILE
    if not path.is_file():
        return None
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"{path}: cannot read it ({exc})") from None
    servers = parse_config(text, str(path))
    entries = loads(text)["mcpServers"]
    shown = tuple((s.name, _as_written(s, entries[s.name])) for s in servers)
    return Proposal(path, hashlib.sha256(data).hexdigest(), servers, shown)


def _answers(store: Path, notice: Notice) -> dict[str, Any]:
    try:
        data = loads(store.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, JSONDecodeError) as exc:
        notice(f"dsh: {store}: not readable ({exc}); remembered MCP answers ignored")
        return {}
    workspaces = data.get("workspaces") if isinstance(data, dict) else None
    return workspaces if isinstance(workspaces, dict) else {}


def _remember(
    store: Path, workspaces: dict[str, Any], proposal: Proposal, trusted: bool, notice: Notice
) -> None:
    workspaces[str(proposal.path.parent)] = {
        "sha256": proposal.digest,
        "trusted": trusted,
        "servers": [name for name, _ in proposal.shown],
    }
    try:
        # private on purpose: which workspaces' commands this user lets dsh run
        write_file_atomic(store, dumps({"version": 1, "workspaces": workspaces}), private=True)
    except StoreError as exc:
        notice(f"dsh: the answer is not remembered: {store}: {exc.__cause__ or exc}")


def _known(workspaces: dict[str, Any], proposal: Proposal) -> bool | None:
    """The answer remembered for this workspace and this very file, if any."""
    known = workspaces.get(str(proposal.path.parent))
    if not isinstance(known, dict) or known.get("sha256") != proposal.digest:
        return None
    trusted = known.get("trusted")
    return trusted if isinstance(trusted, bool) else None


def decide(proposal: Proposal, *, trusted: bool, ask: Ask | None, home: Path, notice: Notice) -> bool:
    """Whether ``proposal``'s servers start (see the module docstring)."""
    if trusted:
        return True
    store = home / TRUST_FILE
    refused = f"dsh: not starting the workspace's MCP servers ({WORKSPACE_FILE}: {proposal.names})"
    answers = _answers(store, notice)
    known = _known(answers, proposal)
    if known is False:
        notice(f"{refused}: declined for this file ({store}); pass --trust-mcp to start them")
    if known is not None:
        return known
    if ask is None:
        notice(f"{refused}: pass --trust-mcp or set {TRUST_ENV}=1 to trust them")
        return False
    answer = ask(proposal)
    if answer is not None:
        _remember(store, answers, proposal, answer, notice)
    return answer is True


def session_servers(
    workspace: Path, files: Sequence[Path], *, trusted: bool, ask: Ask | None, home: Path, notice: Notice
) -> tuple[McpServerSpec, ...]:
    """A session's servers: the workspace's ``.mcp.json`` when :func:`decide` trusts it, then
    each of ``files`` (the user's own, never asked about); a later server of a name wins. Bad
    files are refused (``McpConfigError``) before anything is asked."""
    proposal = read_workspace(workspace)
    own = [spec for path in files for spec in load_config(path)]
    started: tuple[McpServerSpec, ...] = ()
    if proposal is not None:
        proposal = proposal.without({spec.name for spec in own})
        if proposal.servers and decide(proposal, trusted=trusted, ask=ask, home=home, notice=notice):
            started = proposal.servers
    return tuple({spec.name: spec for spec in [*started, *own]}.values())

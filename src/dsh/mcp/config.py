"""MCP server configurations: the typed specs and Claude Code's ``.mcp.json`` format.

``{"mcpServers": {"NAME": {"command", "args"?, "env"?, "cwd"?} | {"type": "http" | "sse",
"url", "headers"?}}}``; a stdio entry may say ``"type": "stdio"``. dsh's own optional keys on
any entry: ``timeout`` (seconds a call may take, default 120) and ``startupTimeout`` (seconds
to start and list tools, default 30). ``${VAR}`` and ``${VAR:-default}`` in ``command``,
``args``, ``env``, ``url`` and ``headers`` expand from dsh's environment (the only way a
secret of dsh's reaches a server: by name, in its config). A bad file is one
:class:`~dsh.errors.McpConfigError` naming the file and the server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from dsh.errors import McpConfigError
from dsh.jsonx import JSONDecodeError, loads

WORKSPACE_FILE: Final = ".mcp.json"
DEFAULT_CALL_TIMEOUT: Final = 120.0
DEFAULT_STARTUP_TIMEOUT: Final = 30.0
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class StdioServer:
    """A server dsh starts as a child process and talks to over its stdin/stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to the tool environment (``dsh.tools.environment``): what the server gets besides it."""
    cwd: str | None = None
    """Relative to the workspace (default: the workspace)."""
    timeout: float = DEFAULT_CALL_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT


@dataclass(frozen=True, slots=True)
class HttpServer:
    """A server reached over Streamable HTTP (``http``) or the older SSE transport (``sse``)."""

    name: str
    url: str
    transport: Literal["http", "sse"] = "http"
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_CALL_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT


McpServerSpec = StdioServer | HttpServer


def expand(text: str, env: Mapping[str, str]) -> str:
    """``${VAR}`` / ``${VAR:-default}`` replaced from ``env`` (an unset one without a default: empty)."""
    return _VARIABLE.sub(lambda m: env.get(m.group(1), m.group(2) or ""), text)


def _strings(value: Any, where: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"{where}: {key!r} must be an object of strings")
    return {str(k): v for k, v in value.items()}


def _seconds(entry: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise McpConfigError(f"{where}: {key!r} must be a positive number of seconds")
    return float(value)


def server_spec(name: str, entry: Any, where: str, env: Mapping[str, str] | None = None) -> McpServerSpec:
    """One ``mcpServers`` entry as a spec (``where``: the file, for the error)."""
    env = os.environ if env is None else env
    where = f"{where}: server {name!r}"
    if not _NAME.match(name):
        raise McpConfigError(f"{where}: a name is 1-40 letters, digits, _ or -")
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where}: expected an object")
    kind = entry.get("type", "stdio" if "command" in entry else None)
    timeout = _seconds(entry, "timeout", DEFAULT_CALL_TIMEOUT, where)
    startup = _seconds(entry, "startupTimeout", DEFAULT_STARTUP_TIMEOUT, where)
    if kind == "stdio":
        command, args, cwd = entry.get("command"), entry.get("args", []), entry.get("cwd")
        if not isinstance(command, str) or not command.strip():
            raise McpConfigError(f"{where}: 'command' must be a non-empty string")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise McpConfigError(f"{where}: 'args' must be a list of strings")
        if cwd is not None and not isinstance(cwd, str):
            raise McpConfigError(f"{where}: 'cwd' must be a string")
        variables = {k: expand(v, env) for k, v in _strings(entry.get("env"), where, "env").items()}
        return StdioServer(
            name, expand(command, env), tuple(expand(a, env) for a in args), variables, cwd, timeout, startup
        )
    if kind in ("http", "sse"):
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise McpConfigError(f"{where}: 'url' must be an http(s) URL")
        headers = {k: expand(v, env) for k, v in _strings(entry.get("headers"), where, "headers").items()}
        return HttpServer(name, expand(url, env), kind, headers, timeout, startup)
    raise McpConfigError(f"{where}: 'type' must be stdio, http or sse (or give a 'command')")


def parse_config(text: str, where: str, env: Mapping[str, str] | None = None) -> tuple[McpServerSpec, ...]:
    """The servers of a ``.mcp.json`` text (``where`` names it in errors)."""
    try:
        data = loads(text)
    except JSONDecodeError as exc:
        raise McpConfigError(f"{where}: not JSON ({exc})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{where}: expected {{"mcpServers": {{NAME: {{...}}}}}}')
    return tuple(server_spec(str(name), entry, where, env) for name, entry in servers.items())


def load_config(path: Path, env: Mapping[str, str] | None = None) -> tuple[McpServerSpec, ...]:
    """The servers of the file at ``path`` (missing or unreadable: one line naming it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise McpConfigError(f"{path}: no such MCP config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"{path}: cannot read it ({exc})") from None
    return parse_config(text, str(path), env)


def workspace_servers(workspace: Path, files: tuple[Path, ...] = ()) -> tuple[McpServerSpec, ...]:
    """The workspace's ``.mcp.json`` (when it has one), then each of ``files``; a later
    server of the same name replaces an earlier one. Nothing is asked: this is for the paths
    where starting them was asked for (``--live-mcp``, recording a scenario); ``dsh run`` and
    ``dsh chat`` go through :func:`dsh.mcp.trust.session_servers`."""
    found = workspace / WORKSPACE_FILE
    specs = [*(load_config(found) if found.is_file() else ()), *(s for f in files for s in load_config(f))]
    return tuple({spec.name: spec for spec in specs}.values())

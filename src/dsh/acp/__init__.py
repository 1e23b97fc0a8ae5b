"""ACP: dsh agents served over the Agent Client Protocol (JSON-RPC on stdio) for editors and agents."""

from dsh.acp.runtime import LiveModels, ModelSource, ReplayModels, Runtime
from dsh.acp.serve import ServeOptions, build_runtime, serve_connection, serve_stdio
from dsh.acp.server import DshAcpAgent
from dsh.acp.updates import PROFILES, Profile

__all__ = [
    "PROFILES",
    "DshAcpAgent",
    "LiveModels",
    "ModelSource",
    "Profile",
    "ReplayModels",
    "Runtime",
    "ServeOptions",
    "build_runtime",
    "serve_connection",
    "serve_stdio",
]

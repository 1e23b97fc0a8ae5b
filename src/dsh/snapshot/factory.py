"""Agent factories named ``module:function``: from a flag, or a project's ini option."""

from __future__ import annotations

import importlib
import sys
import tomllib
from pathlib import Path
from typing import cast

from dsh.errors import UsageError
from dsh.snapshot.runner import AgentFactory

INI = "dsh_snapshot_factory"


def load_factory(spec: str, *, root: Path | None = None) -> AgentFactory:
    """Import ``package.module:function`` (``root`` first on ``sys.path``, as pytest would)."""
    module, _, name = spec.strip().partition(":")
    if not module or not name:
        raise UsageError(f"agent factory {spec!r} must look like package.module:function")
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        found = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise UsageError(f"agent factory {spec!r}: cannot import {module!r} ({exc})") from exc
    except AttributeError as exc:
        raise UsageError(f"agent factory {spec!r}: {module!r} has no {name!r}") from exc
    if not callable(found):
        raise UsageError(f"agent factory {spec!r} is not callable")
    return cast(AgentFactory, found)


def project_factory(start: Path) -> tuple[str, Path] | None:
    """The ``dsh_snapshot_factory`` of the nearest ``pyproject.toml`` at or above ``start``
    (``[tool.pytest.ini_options]``) and that project's root, if one sets it."""
    for folder in [start, *start.parents]:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                doc = tomllib.loads(pyproject.read_text())
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise UsageError(f"{pyproject}: not valid TOML ({exc})") from exc
            value = doc.get("tool", {}).get("pytest", {}).get("ini_options", {}).get(INI)
            return (str(value), folder) if isinstance(value, str) and value.strip() else None
    return None

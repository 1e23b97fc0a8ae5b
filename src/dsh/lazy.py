"""Lazy package exports (PEP 562): the one home of the rule every lazy ``__init__`` follows.

A package lists its public names with their home modules; a name's module is imported the
first time the name is read, and the value is cached in the package so later reads are
plain attribute lookups. ``import dsh.tools.sandbox`` therefore costs that module alone,
not the registry and every built-in tool. Stdlib only, importable from any layer.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: importing this module stays free of ``typing``
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` serving ``homes`` (name → module)."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return __getattr__, __dir__

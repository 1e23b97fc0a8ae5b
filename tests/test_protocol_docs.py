"""Every method and property of every Protocol in ``dsh`` says what it does (a docstring)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator

import dsh

_ADDED_BY_TYPING = {"__init__", "__subclasshook__", "__class_getitem__", "__init_subclass__"}


def _modules() -> Iterator[str]:
    yield dsh.__name__
    for info in pkgutil.walk_packages(dsh.__path__, prefix=f"{dsh.__name__}."):
        if not info.name.endswith(".__main__"):  # importing it would run the CLI
            yield info.name


def _protocols() -> Iterator[type]:
    for name in _modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == name and getattr(value, "_is_protocol", False):
                yield value


def _undocumented(cls: type) -> Iterator[str]:
    for name, member in vars(cls).items():
        if name in _ADDED_BY_TYPING:
            continue
        if isinstance(member, property):
            target: object = member.fget
        elif isinstance(member, classmethod | staticmethod):
            target = member.__func__
        elif inspect.isfunction(member):
            target = member
        else:
            continue
        if not (getattr(target, "__doc__", None) or "").strip():
            yield f"{cls.__module__}.{cls.__qualname__}.{name}"


def test_every_protocol_method_has_a_docstring() -> None:
    protocols = list(_protocols())
    assert len(protocols) >= 15  # the walk found the package's Protocols (17 when written)
    missing = [name for cls in protocols for name in _undocumented(cls)]
    assert missing == []
